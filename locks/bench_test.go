package locks

// Lock cycle rate (BENCH.md figure 1): every design against real servers, no faults, no proxies.
// A cycle is acquire + an empty critical section + release; with 8 clients all of them contend
// for the same lock, each on its own connection, retrying at once when it is busy. The ceiling is
// a raw round trip on the same kind of connection (lockcheck's go-redis settings, a
// go-zookeeper session, or an etcd client's linearizable Get): a cycle needs at least two, so
// each sub-benchmark also reports its time per cycle divided by two round trips measured right
// after it (x2RT).
//
//	go test -run '^$' -bench 'LockCycle|RoundTrip' -benchtime 1s -count 3 ./locks/

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockcheck/lockcheck/internal/redisopt"
)

// benchServers are started once per top-level benchmark and shared by its sub-benchmarks.
type benchServers struct {
	redis []string // 5 lock nodes (under libfaketime, as in a run), direct addresses
	plain string   // the resource's redis: no libfaketime
	zk    string   // a standalone ZooKeeper, direct address
	etcd  string   // a single etcd member, direct address
}

func startBenchServers(b *testing.B) benchServers {
	b.Helper()
	redis.SetLogger(quietRedisLog{}) // a log line would split a benchmark's line in the output
	c := StartTestService(b, TestServiceSpec{Design: "redlock", Nodes: 5})
	s := benchServers{plain: StartPlainRedis(b)}
	for _, n := range c.Nodes {
		s.redis = append(s.redis, c.Direct[n])
	}
	s.zk = StartTestService(b, TestServiceSpec{Design: "zk", Nodes: 1}).Direct["zk1"]
	s.etcd = StartTestService(b, TestServiceSpec{Design: "etcd", Nodes: 1}).Direct["n1"]
	return s
}

// BenchmarkLockCycle runs every registered design with 1 and 8 clients.
func BenchmarkLockCycle(b *testing.B) {
	s := startBenchServers(b)
	for _, d := range All() {
		if s := d.ServiceName(); s != Redis && s != ZooKeeper && s != Etcd {
			continue // the database designs have their own (db_bench_test.go)
		}
		for _, clients := range []int{1, 8} {
			b.Run(fmt.Sprintf("design=%s/clients=%d", d.Name, clients), func(b *testing.B) {
				if d.Name == "get-then-set" && clients > 1 {
					// Contended, it lets two clients in (its failure mode, race-get-then-set) and a
					// release then finds another's value: there is no cycle to time.
					b.Skip("get-then-set is not a lock under contention")
				}
				benchCycles(b, s, d, clients)
			})
		}
	}
}

func benchCycles(b *testing.B, s benchServers, d Design, clients int) {
	nodes := s.redis[:d.Nodes]
	ttl := 10 * time.Second // nothing expires during a benchmark
	switch d.Service {
	case ZooKeeper:
		nodes, ttl = []string{s.zk}, 4*time.Second // ttl is the session timeout
	case Etcd:
		nodes = []string{s.etcd} // one member: etcd designs run on 1 to 7
	}
	role := ""
	if d.ReadWrite {
		role = WriteRole // writers exclude each other: a mutex like the others
	}
	// A fresh key per sub-benchmark and round: no state (or stuck setnx-del key) carries over.
	key := fmt.Sprintf("bench:%s:%d:%d", d.Name, clients, time.Now().UnixNano())
	ls := make([]Lock, clients)
	for i := range ls {
		l, err := d.New(Env{Client: fmt.Sprintf("client-%d", i+1), Nodes: nodes, Key: key, TTL: ttl,
			Timeout: 2 * time.Second, Role: role, Point: func(string) {}})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		ls[i] = l
		// Warm up: connect (a ZooKeeper session takes a while) outside the timed part.
		if err := cycle(l); err != nil {
			b.Fatalf("%s warm-up cycle: %v", d.Name, err)
		}
	}

	roundTrip, closeRT, err := roundTripOn(s, d)
	if err != nil {
		b.Fatal(err)
	}
	defer closeRT()

	var reserved, busy atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, l := range ls {
		wg.Go(func() {
			// A reserved cycle is always completed, so exactly b.N cycles run in all.
			for reserved.Add(1) <= int64(b.N) {
				n, err := contendedCycle(l)
				busy.Add(n)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatalf("%s, %d clients: %v", d.Name, clients, firstErr)
	}
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(b.N)/sec, "cycles/s")
	}
	b.ReportMetric(float64(busy.Load())/float64(b.N), "busy/cycle")
	// The ceiling, measured right after the cycles so that both see the same machine: one
	// connection's round trip to the design's (first) server.
	rt, err := timeRoundTrips(roundTrip, min(b.Elapsed()/2, 150*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(rt.Microseconds()), "RT-us")
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(2*rt), "x2RT")
}

// roundTripOn opens one connection to the first server design d uses and returns one round trip
// on it: PING with lockcheck's go-redis settings, or exists on a go-zookeeper session.
func roundTripOn(s benchServers, d Design) (func() error, func(), error) {
	if d.Service == Etcd {
		return etcdGetOn(s.etcd)
	}
	if d.Service == ZooKeeper {
		conn, _, err := zk.Connect([]string{s.zk}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkBenchQuiet{}))
		if err != nil {
			return nil, nil, err
		}
		op := func() error { _, _, err := conn.Exists("/"); return err }
		return op, conn.Close, op()
	}
	rdb := redis.NewClient(redisopt.Options(s.redis[0], 2*time.Second))
	op := func() error { return rdb.Ping(context.Background()).Err() }
	return op, func() { _ = rdb.Close() }, op()
}

// timeRoundTrips runs op for about d (at least 20 times) and returns the mean time of one.
func timeRoundTrips(op func() error, d time.Duration) (time.Duration, error) {
	n, start := 0, time.Now()
	for n < 20 || time.Since(start) < d {
		if err := op(); err != nil {
			return 0, err
		}
		n++
	}
	return time.Since(start) / time.Duration(n), nil
}

// cycle is one uncontended acquire + release.
func cycle(l Lock) error {
	_, err := contendedCycle(l)
	return err
}

// contendedCycle retries a busy lock at once until it holds it, then releases it; it returns how
// many attempts were refused as busy. A design that panics fails its own benchmark only.
func contendedCycle(l Lock) (busy int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := l.Acquire(ctx)
		cancel()
		if errors.Is(err, ErrBusy) {
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

// BenchmarkRoundTrip is the ceiling: PING on lockcheck's go-redis settings (to a libfaketime lock
// node, as the designs see, and to the plain resource redis, which shows what libfaketime costs),
// and Exists on a go-zookeeper session. With 8 clients each has its own connection.
func BenchmarkRoundTrip(b *testing.B) {
	s := startBenchServers(b)
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprintf("server=redis/clients=%d", clients), func(b *testing.B) {
			benchRedisPing(b, s.redis[0], clients)
		})
		b.Run(fmt.Sprintf("server=redis-nofaketime/clients=%d", clients), func(b *testing.B) {
			benchRedisPing(b, s.plain, clients)
		})
		b.Run(fmt.Sprintf("server=zookeeper/clients=%d", clients), func(b *testing.B) {
			benchZKExists(b, s.zk, clients)
		})
		b.Run(fmt.Sprintf("server=etcd/clients=%d", clients), func(b *testing.B) {
			ops := make([]func() error, clients)
			for i := range ops {
				op, closeOp, err := etcdGetOn(s.etcd)
				if err != nil {
					b.Fatal(err)
				}
				defer closeOp()
				ops[i] = op
			}
			runRoundTrips(b, ops)
		})
	}
}

func benchRedisPing(b *testing.B, addr string, clients int) {
	ops := make([]func() error, clients)
	for i := range ops {
		rdb := redis.NewClient(redisopt.Options(addr, 2*time.Second))
		defer rdb.Close()
		ops[i] = func() error { return rdb.Ping(context.Background()).Err() }
	}
	runRoundTrips(b, ops)
}

func benchZKExists(b *testing.B, addr string, clients int) {
	ops := make([]func() error, clients)
	for i := range ops {
		conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkBenchQuiet{}))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		ops[i] = func() error { _, _, err := conn.Exists("/"); return err }
	}
	runRoundTrips(b, ops)
}

type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

type zkBenchQuiet struct{}

func (zkBenchQuiet) Printf(string, ...any) {}

// runRoundTrips runs b.N operations spread over the clients, each client one at a time.
func runRoundTrips(b *testing.B, ops []func() error) {
	for _, op := range ops {
		if err := op(); err != nil { // connect outside the timed part
			b.Fatal(err)
		}
	}
	var reserved atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, op := range ops {
		wg.Go(func() {
			for reserved.Add(1) <= int64(b.N) {
				if err := op(); err != nil {
					failed.Store(&err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(b.N)/sec, "ops/s")
	}
}

// etcdGetOn opens an etcd client of its own to addr and returns one linearizable Get on it.
func etcdGetOn(addr string) (func() error, func(), error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, err
	}
	op := func() error { _, err := c.Get(context.Background(), "x"); return err }
	return op, func() { _ = c.Close() }, op()
}
