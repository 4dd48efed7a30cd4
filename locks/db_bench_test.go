package locks_test

// Lock cycle rate of the database designs next to set-nx-px, in the style of BenchmarkLockCycle
// (bench_test.go): real servers started once (a MariaDB, a PostgreSQL, a Redis lock node under
// libfaketime as in every run), no faults, no proxies. A cycle is acquire + an empty critical
// section + release; with 8 clients all contend for the same lock, each on its own session, and
// a refused client retries at once (the blocking designs wait in the server instead). x2RT is
// the time per cycle over two round trips (SELECT 1, or PING) on one session of the same server.
//
//	go test -run '^$' -bench DatabaseLockCycle -benchtime 2s -count 3 ./locks/

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/services/mariadb"
	"github.com/lockcheck/lockcheck/services/postgres"
)

func BenchmarkDatabaseLockCycle(b *testing.B) {
	for _, name := range append([]string{"set-nx-px"}, dbDesigns...) {
		s := startDB(b, name, "")
		for _, clients := range []int{1, 8} {
			b.Run(fmt.Sprintf("design=%s/clients=%d", name, clients), func(b *testing.B) {
				benchDBCycles(b, s, clients)
			})
		}
	}
}

// direct is what a client dials without the run's proxies: the servers themselves.
func (s *dbService) direct() locks.Endpoints {
	return s.top.Instance.Endpoints("bench", s.top.Instance.Upstream)
}

func benchDBCycles(b *testing.B, s *dbService, clients int) {
	e := s.direct()
	key := fmt.Sprintf("bench:%s:%d:%d", s.d.Name, clients, time.Now().UnixNano())
	ls := make([]locks.Lock, clients)
	for i := range ls {
		l, err := s.d.New(locks.Env{Client: fmt.Sprintf("client-%d", i+1), Nodes: e.Nodes, Params: e.Params, Key: key,
			TTL: 10 * time.Second, Timeout: 2 * time.Second, Point: func(string) {}})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		ls[i] = l
		if _, err := dbCycle(l); err != nil { // warm up: connect, make the table or sequence
			b.Fatalf("%s warm-up cycle: %v", s.d.Name, err)
		}
	}
	roundTrip, closeRT, err := dbRoundTrip(s.d.ServiceName(), e)
	if err != nil {
		b.Fatal(err)
	}
	defer closeRT()

	var reserved, busy atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, l := range ls {
		wg.Go(func() {
			for reserved.Add(1) <= int64(b.N) {
				n, err := dbCycle(l)
				busy.Add(n)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatalf("%s, %d clients: %v", s.d.Name, clients, firstErr)
	}
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(b.N)/sec, "cycles/s")
	}
	b.ReportMetric(float64(busy.Load())/float64(b.N), "busy/cycle")
	n, start := 0, time.Now()
	for n < 20 || time.Since(start) < 150*time.Millisecond {
		if err := roundTrip(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	rt := time.Since(start) / time.Duration(n)
	b.ReportMetric(float64(rt.Microseconds()), "RT-us")
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(2*rt), "x2RT")
}

// dbCycle takes the lock (retrying at once while it is busy) and gives it back; it returns how
// many attempts were refused.
func dbCycle(l locks.Lock) (busy int64, err error) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := l.Acquire(ctx)
		cancel()
		if errors.Is(err, locks.ErrBusy) {
			busy++
			continue
		}
		if err != nil {
			return busy, fmt.Errorf("acquire: %w", err)
		}
		break
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		return busy, fmt.Errorf("release: %w", err)
	}
	return busy, nil
}

// dbRoundTrip is one round trip on one session of the service's server.
func dbRoundTrip(service string, e locks.Endpoints) (func() error, func(), error) {
	ctx := context.Background()
	switch service {
	case locks.MariaDB:
		db, err := sql.Open("mysql", mariadb.DSN(e.Nodes[0], 2*time.Second))
		if err != nil {
			return nil, nil, err
		}
		db.SetMaxOpenConns(1)
		op := func() error { _, err := db.ExecContext(ctx, "SELECT 1"); return err }
		return op, func() { _ = db.Close() }, op()
	case locks.PostgreSQL:
		cfg, err := pgx.ParseConfig(postgres.ConnString(e.Nodes[0], e.Params[locks.ParamUser], e.Params[locks.ParamDatabase], 2*time.Second))
		if err != nil {
			return nil, nil, err
		}
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, nil, err
		}
		op := func() error { _, err := conn.Exec(ctx, "SELECT 1"); return err }
		return op, func() { _ = conn.Close(ctx) }, op()
	default:
		rdb := redis.NewClient(redisopt.Options(e.Nodes[0], 2*time.Second))
		op := func() error { return rdb.Ping(ctx).Err() }
		return op, func() { _ = rdb.Close() }, op()
	}
}
