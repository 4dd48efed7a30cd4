//go:build !quickstart

package locks

// pg-advisory-xact: PostgreSQL's transaction-level advisory lock. Inside BEGIN,
// pg_try_advisory_xact_lock(key) takes it if it is free (else the transaction is rolled back and
// the client retries); it is held until the transaction ends, so COMMIT gives it back and there
// is no unlock call to forget. An open transaction is what holds it: a holder paused past
// idle_in_transaction_session_timeout (off by default) loses its session, its transaction and the
// lock without being told. The token is nextval of a sequence in the statement that takes the
// lock: unlike a counter updated inside the transaction, a sequence is not rolled back with it.

import (
	"context"
	"errors"
)

func init() {
	Register(Design{
		// A session lock: the server frees it with the session, which a cut connection or an idle limit
		// ends.
		Promise: Promise{Lease: idleLimit(ParamIdleInTransaction), Connection: true,
			Words: "the lock until the transaction ends, or until it has been idle for the server's limit inside a transaction"},
		Name:     "pg-advisory-xact",
		Summary:  "BEGIN; SELECT pg_try_advisory_xact_lock(key) to take, COMMIT to give back; freed when the transaction ends (PostgreSQL)",
		Source:   "PostgreSQL advisory locks (transaction level)",
		Token:    "nextval of a sequence in the statement that takes the lock: not rolled back with the transaction, so it grows with every acquisition",
		Nodes:    1,
		Expires:  false,
		Service:  PostgreSQL,
		Points:   []string{BeforeLockStatement},
		Protects: "a holder that dies, and a forgotten unlock: the lock ends with the transaction",
		FailureModes: []string{
			"a holder paused past idle_in_transaction_session_timeout loses its transaction, and the lock, without being told: double ownership (the " +
				"database K2)",
			"a server crash-restart ends every transaction: the lock is free again while its holder works on",
			"not reentrant: a nested take succeeds, but the first COMMIT frees both",
		},
		Scenarios: []string{"no-faults-pg-advisory-xact", "idle-timeout-pg-advisory-xact"},
		New: func(env Env) (Lock, error) {
			s, err := newPGSession(env)
			if err != nil {
				return nil, err
			}
			return &pgAdvisoryXact{s: s, env: env, key: advisoryKey(env.Key)}, nil
		},
	})
}

type pgAdvisoryXact struct {
	s     *pgSession
	env   Env
	key   int64
	ready bool // the sequence exists
	held  bool // a transaction holding the lock is open
}

func (l *pgAdvisoryXact) Acquire(ctx context.Context) (*int64, error) {
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
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		l.s.drop()
		return nil, err
	}
	l.env.Point(BeforeLockStatement)
	token, err := pgTryLock(ctx, conn, "pg_try_advisory_xact_lock", l.key)
	switch {
	case errors.Is(err, ErrBusy):
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			l.s.drop()
		}
		return nil, ErrBusy
	case err != nil:
		l.s.drop() // the lock may have been taken: the outcome is unknown
		return nil, err
	}
	l.held = true
	return token, nil
}

func (l *pgAdvisoryXact) Release(ctx context.Context) error {
	if !l.held || l.s.conn == nil || l.s.conn.IsClosed() {
		return ErrNotHeld // never taken, or the session and its transaction are gone
	}
	l.held = false
	_, err := l.s.conn.Exec(ctx, "COMMIT")
	switch {
	case sessionEnded(err):
		l.s.drop()
		return errors.Join(ErrNotHeld, err) // the server ended the transaction: the lock went with it
	case err != nil:
		l.s.drop()
		return err
	}
	return nil
}

func (l *pgAdvisoryXact) Close() error { return l.s.close() }
