//go:build !quickstart

package locks

// mysql-get-lock: MySQL's and MariaDB's named user-level lock. GET_LOCK(name, timeout) takes it
// (waiting in the server up to timeout), RELEASE_LOCK(name) gives it back; the server frees it
// when the session ends. It is the lock many job schedulers and migration tools build on. A
// holder paused past the server's idle limit (wait_timeout) loses its session and the lock
// without being told. MariaDB counts nested GET_LOCKs of one session (since 10.0.2), so the lock
// is re-entrant. The token is NEXTVAL of a sequence, taken in the same statement as the lock:
// sequences are never rolled back, so every acquisition gets a larger number than the one before.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

func init() {
	Register(Design{
		// A session lock: the server frees it with the session, which a cut connection or an idle limit
		// ends.
		Promise: Promise{Lease: idleLimit(ParamIdleLimit), Connection: true,
			Words: "the lock until given back, or until the session has been idle for the server's idle limit"},
		Name:      "mysql-get-lock",
		Summary:   "SELECT GET_LOCK(name, timeout) to take (blocking), RELEASE_LOCK(name) to give back; freed when the session ends (MariaDB)",
		Source:    "MySQL/MariaDB named locks (GET_LOCK, RELEASE_LOCK), as job schedulers and migration tools use them",
		Token:     "NEXTVAL of a sequence in the statement that takes the lock: never rolled back, so it grows with every acquisition",
		Nodes:     1,
		Expires:   false,
		Reentrant: true,
		Service:   MariaDB,
		Points:    []string{BeforeLockStatement},
		Blocking:  "GET_LOCK(name, timeout) waits in the server until the lock is free or the timeout passes",
		Protects:  "a holder that dies: the server ends its session and frees the lock",
		FailureModes: []string{
			"a holder paused past wait_timeout loses its session, and the lock, without being told: double ownership (the database K2)",
			"a server crash-restart frees the lock while its holder works on",
			"with the default wait_timeout (8 hours) a paused holder keeps everyone waiting",
		},
		Scenarios: []string{"no-faults-mysql-get-lock", "idle-timeout-mysql-get-lock", "db/pause-defaults-mysql-get-lock",
			"db/partition-holder-mysql-get-lock", "db/crash-restart-mysql-get-lock", "db/kill-holder-mysql-get-lock", "db/lost-reply-mysql-get-lock"},
		New: func(env Env) (Lock, error) {
			s, err := newMySQLSession(env)
			if err != nil {
				return nil, err
			}
			return &mysqlGetLock{s: s, env: env}, nil
		},
	})
}

const getLockSequence = "CREATE SEQUENCE IF NOT EXISTS lock_fence"

type mysqlGetLock struct {
	s     *mysqlSession
	env   Env
	ready bool // the sequence exists
}

func (l *mysqlGetLock) Acquire(ctx context.Context) (*int64, error) {
	conn, err := l.s.session(ctx)
	if err != nil {
		return nil, err
	}
	if !l.ready {
		if _, err := conn.ExecContext(ctx, getLockSequence); err != nil {
			l.s.drop()
			return nil, err
		}
		l.ready = true
	}
	l.env.Point(BeforeLockStatement)
	// GET_LOCK answers 1 (taken), 0 (timed out: busy) or NULL (an error); the token is drawn
	// only when it was taken.
	var token sql.NullInt64
	err = conn.QueryRowContext(ctx, fmt.Sprintf("SELECT CASE GET_LOCK(?, %.3f) WHEN 1 THEN NEXTVAL(lock_fence) WHEN 0 THEN 0 END",
		waitWithin(ctx).Seconds()), l.env.Key).Scan(&token)
	switch {
	case err != nil:
		l.s.drop() // the lock may have been taken: the outcome is unknown
		return nil, err
	case !token.Valid:
		l.s.drop()
		return nil, errors.New("GET_LOCK returned NULL")
	case token.Int64 == 0:
		return nil, ErrBusy
	}
	return &token.Int64, nil
}

func (l *mysqlGetLock) Release(ctx context.Context) error {
	if l.s.conn == nil {
		return ErrNotHeld // the session, and its lock, were dropped
	}
	// 1: released; 0: held by another session; NULL: nobody holds it.
	var released sql.NullInt64
	if err := l.s.conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", l.env.Key).Scan(&released); err != nil {
		l.s.drop()
		return err
	}
	if !released.Valid || released.Int64 != 1 {
		return ErrNotHeld
	}
	return nil
}

func (l *mysqlGetLock) Close() error { return l.s.close() }
