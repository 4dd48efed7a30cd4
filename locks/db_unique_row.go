//go:build !quickstart

package locks

// db-unique-row: the table lock of the Chinese survey of lock families (docs/CLAIMS.md), on
// MariaDB with InnoDB as the article has it. A table has a UNIQUE key on the lock's name;
// INSERTing the row takes the lock (a duplicate-key error means someone holds it: try again),
// DELETEing it by name gives it back. The row is the lock and nothing else: it has no expiry and
// no owner. A holder that dies, or whose DELETE never arrives, leaves the row for ever and every
// other client waits for ever (the article names this itself); an INSERT whose reply is lost may
// have committed, and then nobody holds the lock that everybody waits for. The fencing token is
// the row's AUTO_INCREMENT id.

import (
	"context"
	"errors"
)

func init() {
	Register(Design{
		Name:     "db-unique-row",
		Summary:  "INSERT a row whose lock name is a UNIQUE key to take, DELETE it by name to give back (MariaDB, InnoDB); no expiry",
		Source:   "Chinese survey of lock families: the table lock (a UNIQUE key on the method name)",
		Token:    "the row's AUTO_INCREMENT id: it grows with every acquisition while the table's counter lives (InnoDB keeps it across restarts)",
		Nodes:    1,
		Expires:  false,
		Service:  MariaDB,
		Points:   []string{BeforeLockStatement},
		Protects: "mutual exclusion while every holder lives and its DELETE arrives",
		FailureModes: []string{
			"no expiry: a holder that dies, or whose DELETE is lost (partition, server crash), leaves the row for ever: stuck",
			"an INSERT whose reply is lost may have committed: the lock is taken and nobody holds it, for ever",
			"not reentrant: the holder's second INSERT is a duplicate; not blocking and not fair: waiters retry by luck",
			"release deletes by name with no owner check: a late DELETE frees whoever holds the lock then",
		},
		Scenarios: []string{"no-faults-db-unique-row", "kill-holder-db-unique-row", "lost-reply-db-unique-row", "db/partition-holder-db-unique-row"},
		New: func(env Env) (Lock, error) {
			s, err := newMySQLSession(env)
			if err != nil {
				return nil, err
			}
			return &dbUniqueRow{s: s, env: env}, nil
		},
	})
}

// uniqueRowTable is the article's table, with `desc` named description.
const uniqueRowTable = `CREATE TABLE IF NOT EXISTS method_lock (
  id BIGINT NOT NULL AUTO_INCREMENT,
  method_name VARCHAR(64) NOT NULL DEFAULT '',
  description VARCHAR(1024) NOT NULL DEFAULT '',
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  UNIQUE KEY uidx_method_name (method_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

type dbUniqueRow struct {
	s     *mysqlSession
	env   Env
	ready bool // the table exists
}

func (l *dbUniqueRow) Acquire(ctx context.Context) (*int64, error) {
	conn, err := l.s.session(ctx)
	if err != nil {
		return nil, err
	}
	if !l.ready {
		if _, err := conn.ExecContext(ctx, uniqueRowTable); err != nil {
			l.s.drop()
			return nil, err
		}
		l.ready = true
	}
	l.env.Point(BeforeLockStatement)
	res, err := conn.ExecContext(ctx, "INSERT INTO method_lock (method_name, description) VALUES (?, ?)", l.env.Key, l.env.Client)
	switch {
	case mysqlErrorIs(err, erDupEntry, erDeadlock):
		// A duplicate key: someone holds it. A deadlock: InnoDB chose this INSERT as the victim
		// among inserters waiting on a row being deleted, and rolled it back: not taken either.
		return nil, ErrBusy
	case err != nil:
		l.s.drop() // the INSERT may have committed: the outcome is unknown
		return nil, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, errors.Join(errors.New("took the lock but read no AUTO_INCREMENT id"), err)
	}
	return &id, nil
}

func (l *dbUniqueRow) Release(ctx context.Context) error {
	conn, err := l.s.session(ctx)
	if err != nil {
		return err
	}
	res, err := conn.ExecContext(ctx, "DELETE FROM method_lock WHERE method_name = ?", l.env.Key)
	for mysqlErrorIs(err, erDeadlock) && ctx.Err() == nil {
		// Rolled back as a deadlock's victim: it certainly deleted nothing, so it is safe to send
		// again (left alone, the row would stay for ever).
		res, err = conn.ExecContext(ctx, "DELETE FROM method_lock WHERE method_name = ?", l.env.Key)
	}
	if err != nil {
		l.s.drop()
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (l *dbUniqueRow) Close() error { return l.s.close() }
