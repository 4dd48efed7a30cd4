//go:build ignore

// go-pglock_adapter.go: github.com/allisson/go-pglock behind lockcheck's lock-client protocol, on
// PostgreSQL. lockcheck builds it with its protocol helper (serve, answers) against the library's
// version under test. The library's Lock holds a connection of its own; the advisory lock lives
// as long as that session does.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	pglock "github.com/allisson/go-pglock/v3"
	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
)

func main() { serve(newLock) }

type lock struct {
	db   *sql.DB
	id   int64
	lock *pglock.Lock // nil until the first acquire, and again once its session broke
}

func newLock(init initRequest) (lockClient, error) {
	if len(init.Nodes) == 0 {
		return nil, errors.New("no PostgreSQL node")
	}
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&connect_timeout=2",
		init.Params["user"], init.Nodes[0], init.Params["database"]))
	if err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write([]byte(init.Lock))
	return &lock{db: db, id: int64(h.Sum64() >> 1)}, nil
}

func (l *lock) acquire(within time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if l.lock == nil {
		lk, err := pglock.NewLock(ctx, l.id, l.db)
		if err != nil {
			return unknown(err)
		}
		l.lock = &lk
	}
	took, err := l.lock.Lock(ctx) // one try: lockcheck retries
	switch {
	case err != nil:
		l.drop() // its session may be gone, and a lock it held with it
		return unknown(err)
	case !took:
		return fail("busy")
	}
	return ok()
}

func (l *lock) release(within time.Duration) answer {
	if l.lock == nil {
		return fail("not held: its session ended")
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := l.lock.Unlock(ctx); err != nil { // the library says nothing of a lock not held
		l.drop()
		return unknown(err)
	}
	return ok()
}

// drop closes the library's session: the server lets go of whatever it held.
func (l *lock) drop() {
	if l.lock != nil {
		_ = l.lock.Close()
		l.lock = nil
	}
}

func (l *lock) close() {
	l.drop()
	_ = l.db.Close()
}
