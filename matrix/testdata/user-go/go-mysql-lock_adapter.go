//go:build ignore

// go-mysql-lock_adapter.go: github.com/sanketplus/go-mysql-lock behind lockcheck's lock-client
// protocol, on MariaDB. lockcheck builds it with its protocol helper (serve, answers) against the
// library's version under test. The library takes GET_LOCK on a connection of its own and pings
// it in the background; the lock's context ends when a ping fails.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	_ "github.com/go-sql-driver/mysql"
	gomysqllock "github.com/sanketplus/go-mysql-lock"
)

func main() { serve(newLock) }

type lock struct {
	locker *gomysqllock.MysqlLocker
	key    string
	held   *gomysqllock.Lock
}

func newLock(init initRequest) (lockClient, error) {
	if len(init.Nodes) == 0 {
		return nil, errors.New("no MariaDB node")
	}
	db, err := sql.Open("mysql", fmt.Sprintf("%s@tcp(%s)/%s?timeout=2s", init.Params["user"], init.Nodes[0], init.Params["database"]))
	if err != nil {
		return nil, err
	}
	// The library pings the lock's connection at this interval; a failed ping ends the lock's context.
	locker := gomysqllock.NewMysqlLocker(db, gomysqllock.WithRefreshInterval(100*time.Millisecond))
	return &lock{locker: locker, key: init.Lock}, nil
}

func (l *lock) acquire(within time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	held, err := l.locker.ObtainTimeoutContext(ctx, l.key, 0) // one try (GET_LOCK with no wait): lockcheck retries
	switch {
	case errors.Is(err, gomysqllock.ErrMySQLTimeout):
		return fail("busy")
	case err != nil:
		return unknown(err)
	}
	l.held = held
	return ok()
}

// release: the library's Release, bounded: it does not say whether the lock was still held.
func (l *lock) release(within time.Duration) answer {
	if l.held == nil {
		return fail("not held")
	}
	held := l.held
	l.held = nil
	done := make(chan error, 1)
	go func() { done <- held.Release() }()
	select {
	case err := <-done:
		if err != nil {
			return fail(err.Error())
		}
		return ok()
	case <-time.After(within):
		return unknownf("Release did not return within %s", within)
	}
}

// valid: the lock's context, which the library ends when its connection's ping fails.
func (l *lock) valid(within time.Duration) answer {
	if l.held == nil || l.held.GetContext().Err() != nil {
		return fail("the library says the lock was lost")
	}
	return ok()
}

func (l *lock) close() {}
