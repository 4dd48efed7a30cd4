//go:build !quickstart

package locks

// pg-advisory: PostgreSQL's session-level advisory lock, as many job queues and migration tools
// use it. pg_try_advisory_lock(key) takes it if it is free (else the client retries),
// pg_advisory_unlock(key) gives it back; the server frees it when the session ends, so a holder
// that dies frees it, and so does one merely paused past idle_session_timeout (off by default),
// which is not told. The session counts nested locks (re-entrant). The token is nextval of a
// sequence, drawn in the same statement that takes the lock: a sequence is never rolled back, so
// each acquisition gets a larger number than the one before, and a holder whose session ended
// is behind the next one.

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

func init() {
	Register(Design{
		// A session lock: the server frees it with the session, which a cut connection or an idle limit
		// ends.
		Promise: Promise{Lease: idleLimit(ParamIdleLimit), Connection: true,
			Words: "the lock until given back, or until the session has been idle for the server's idle limit"},
		Name:      "pg-advisory",
		Summary:   "SELECT pg_try_advisory_lock(key) to take, pg_advisory_unlock(key) to give back; freed when the session ends (PostgreSQL)",
		Source:    "PostgreSQL advisory locks (session level), as job queues and migration tools use them",
		Token:     "nextval of a sequence in the statement that takes the lock: never rolled back, so it grows with every acquisition",
		Nodes:     1,
		Expires:   false,
		Reentrant: true,
		Service:   PostgreSQL,
		Points:    []string{BeforeLockStatement},
		Protects:  "a holder that dies: the server ends its session and frees the lock",
		FailureModes: []string{
			"a holder paused past idle_session_timeout loses its session, and the lock, without being told: double ownership (the database K2)",
			"a server crash-restart frees the lock while its holder works on",
			"re-entrant per session: a retry on the same session after a lost reply would take it twice, and one unlock would leave it held",
		},
		Scenarios: []string{"no-faults-pg-advisory", "idle-timeout-pg-advisory", "db/crash-restart-pg-advisory", "db/reentrant-pg-advisory"},
		New: func(env Env) (Lock, error) {
			s, err := newPGSession(env)
			if err != nil {
				return nil, err
			}
			return &pgAdvisory{s: s, env: env, key: advisoryKey(env.Key)}, nil
		},
	})
}

// pgFenceSequence is the advisory designs' token counter.
const pgFenceSequence = "CREATE SEQUENCE IF NOT EXISTS lock_fence"

// pgTryLock takes the lock with try and draws a token in the same statement: the token, or
// ErrBusy.
func pgTryLock(ctx context.Context, conn *pgx.Conn, try string, key int64) (*int64, error) {
	var token *int64
	if err := conn.QueryRow(ctx, "SELECT CASE WHEN "+try+"($1) THEN nextval('lock_fence') END", key).Scan(&token); err != nil {
		return nil, err
	}
	if token == nil {
		return nil, ErrBusy
	}
	return token, nil
}

// pgPrepare makes the token sequence. Sessions that make it at the same moment may collide in
// the catalogue; the loser's error means it exists.
func pgPrepare(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, pgFenceSequence)
	if c := pgCode(err); c == pgDuplicateTable || c == pgUniqueViolation {
		return nil
	}
	return err
}

type pgAdvisory struct {
	s     *pgSession
	env   Env
	key   int64
	ready bool // the sequence exists
}

func (l *pgAdvisory) Acquire(ctx context.Context) (*int64, error) {
	conn, err := l.s.session(ctx)
	if err != nil {
		return nil, err
	}
	if !l.ready {
		if err := pgPrepare(ctx, conn); err != nil {
			l.s.drop()
			return nil, err
		}
		l.ready = true
	}
	l.env.Point(BeforeLockStatement)
	token, err := pgTryLock(ctx, conn, "pg_try_advisory_lock", l.key)
	if err != nil && !errors.Is(err, ErrBusy) {
		l.s.drop() // the lock may have been taken: the outcome is unknown
	}
	return token, err
}

func (l *pgAdvisory) Release(ctx context.Context) error {
	if l.s.conn == nil || l.s.conn.IsClosed() {
		return ErrNotHeld // the session, and its lock, are gone
	}
	var released bool
	err := l.s.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", l.key).Scan(&released)
	switch {
	case sessionEnded(err):
		l.s.drop()
		return errors.Join(ErrNotHeld, err) // the server ended the session: the lock went with it
	case err != nil:
		l.s.drop()
		return err
	case !released:
		return ErrNotHeld
	}
	return nil
}

func (l *pgAdvisory) Close() error { return l.s.close() }
