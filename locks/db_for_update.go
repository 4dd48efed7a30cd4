//go:build !quickstart

package locks

// db-for-update: the exclusive-lock version of the Chinese survey of lock families
// (docs/CLAIMS.md), on MariaDB with InnoDB. With autocommit off, SELECT ... FOR UPDATE on the
// lock's row takes InnoDB's exclusive row lock (a waiter blocks in the server, and InnoDB grants
// waiters in the order they came); COMMIT gives it back. The lock belongs to the transaction, so
// the server frees it when the holder's session ends: a holder that dies frees it, as the article
// says, but so does one that is merely paused past the server's idle limit (wait_timeout,
// idle_transaction_timeout), and it is not told. The token is a version column incremented
// inside the locked transaction: it is rolled back with it, so when the server ends a holder's
// session the next holder gets the same token, and fencing cannot tell the two apart.

import (
	"context"
	"database/sql"
	"fmt"
)

func init() {
	Register(Design{
		// A session lock: the server frees it with the session, which a cut connection or an idle limit
		// ends.
		Promise: Promise{Lease: idleLimit(ParamIdleInTransaction), Connection: true,
			Words: "the lock until the transaction ends, or until it has been idle for the server's limit inside a transaction"},
		Name:    "db-for-update",
		Summary: "autocommit off, SELECT ... FOR UPDATE on the lock's row to take (blocking), COMMIT to give back (MariaDB, InnoDB)",
		Source:  "Chinese survey of lock families: the exclusive-lock (FOR UPDATE) version",
		Token: "a version column incremented inside the locked transaction: rolled back with it, so after the server ends a holder's session " +
			"the next holder gets the same token",
		Nodes:    1,
		Expires:  false,
		Service:  MariaDB,
		Points:   []string{BeforeLockStatement},
		Blocking: "SELECT ... FOR UPDATE waits in the server for the row lock (InnoDB grants it in arrival order)",
		Protects: "a holder that dies: the server ends its session and rolls its transaction back",
		FailureModes: []string{
			"a holder paused past the server's idle limit loses its session, and the lock, without being told: double ownership (the database K2)",
			"its token is rolled back with the transaction: the holder after a lost session gets the same token, and fencing lets both through",
			"a server crash-restart ends every transaction: the lock is free again while its holder works on",
			"not reentrant: a second SELECT ... FOR UPDATE in the same transaction succeeds, but the first COMMIT frees both",
		},
		Scenarios: []string{"no-faults-db-for-update", "idle-timeout-db-for-update", "db/crash-restart-db-for-update"},
		New: func(env Env) (Lock, error) {
			// The article's connection.setAutoCommit(false): every statement runs in a transaction
			// that lasts until COMMIT.
			s, err := newMySQLSession(env, "SET autocommit = 0")
			if err != nil {
				return nil, err
			}
			return &dbForUpdate{s: s, env: env}, nil
		},
	})
}

const forUpdateTable = `CREATE TABLE IF NOT EXISTS method_lock_row (
  method_name VARCHAR(64) NOT NULL,
  version BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (method_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

type dbForUpdate struct {
	s     *mysqlSession
	env   Env
	ready bool // the table and the lock's row exist
	held  bool // a transaction holding the row lock is open
}

func (l *dbForUpdate) Acquire(ctx context.Context) (*int64, error) {
	conn, err := l.s.session(ctx)
	if err != nil {
		return nil, err
	}
	if !l.ready {
		if err := l.prepare(ctx, conn); err != nil {
			l.s.drop()
			return nil, err
		}
		l.ready = true
	}
	l.env.Point(BeforeLockStatement)
	// The article blocks until it gets the row. The wait is bounded in the server, so that its
	// end is an answer (busy) rather than a timeout with the outcome unknown.
	wait := waitWithin(ctx)
	var version int64
	err = conn.QueryRowContext(ctx, fmt.Sprintf("SET STATEMENT max_statement_time = %.3f FOR "+
		"SELECT version FROM method_lock_row WHERE method_name = ? FOR UPDATE", wait.Seconds()), l.env.Key).Scan(&version)
	switch {
	case mysqlErrorIs(err, erStatementTimeExpired, erLockWaitTimeout):
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			l.s.drop()
		}
		return nil, ErrBusy
	case err != nil:
		l.s.drop() // the row lock may have been granted: the outcome is unknown
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "UPDATE method_lock_row SET version = version + 1 WHERE method_name = ?", l.env.Key); err != nil {
		l.s.drop() // ends the transaction: rather no lock than one without a token
		return nil, fmt.Errorf("took the lock but could not increment its version: %w", err)
	}
	token := version + 1
	l.held = true
	return &token, nil
}

// prepare makes the table and the lock's row. It must not wait for the row's lock: a plain
// SELECT reads without locking, and only a missing row is inserted.
func (l *dbForUpdate) prepare(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, forUpdateTable); err != nil {
		return err
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM method_lock_row WHERE method_name = ?", l.env.Key).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := conn.ExecContext(ctx, "INSERT IGNORE INTO method_lock_row (method_name) VALUES (?)", l.env.Key); err != nil {
			return err
		}
	}
	_, err := conn.ExecContext(ctx, "COMMIT")
	return err
}

func (l *dbForUpdate) Release(ctx context.Context) error {
	if !l.held || l.s.conn == nil {
		return ErrNotHeld // never taken, or the session and its transaction were dropped
	}
	l.held = false
	if _, err := l.s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		l.s.drop()
		return err
	}
	return nil
}

func (l *dbForUpdate) Close() error { return l.s.close() }
