package redis_test

// Start-up (BENCH.md figure 6): time from nothing to a ready service, and the servers' resident
// memory once ready; and how long a Sentinel failover takes. Stopping is not timed.
//
//	go test -run '^$' -bench 'Start' -benchtime 5x ./services/redis/
//	go test -run '^$' -bench SentinelFailover -benchtime 10x ./services/redis/

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/redis"
)

// BenchmarkStartRedis: 5 lock nodes (under libfaketime) + the resource's server, as a Redlock run
// starts them.
func BenchmarkStartRedis(b *testing.B) {
	spec := services.Spec{Design: lockDesign(b), Nodes: 5}
	if err := local.CheckNeeds(redis.Spec("n1", true, "", nil).Needs); err != nil {
		b.Fatal(err)
	}
	var rss []float64
	b.ResetTimer()
	for range b.N {
		dir := b.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		topo, err := services.StartKind(ctx, spec, services.Options{Dir: dir})
		var res providers.Provider
		var resNode providers.Node
		if err == nil {
			if res, err = local.New(providers.Options{Dir: dir}); err == nil {
				resNode, err = redis.StartServer(ctx, res, "resource", false)
			}
		}
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		pids := []int{pid(resNode)}
		for _, name := range topo.Plan.Nodes {
			pids = append(pids, pid(node(b, topo, name)))
		}
		rss = append(rss, totalRSS(b, pids))
		if err := topo.Stop(); err != nil {
			b.Fatal(err)
		}
		if err := res.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportRSS(b, rss, 6)
}

// BenchmarkSentinelFailover: from kill -9 of the primary until a majority of sentinels name the
// replica and it calls itself master. Each iteration starts a fresh topology (1 primary,
// 1 replica, 3 sentinels; start-up is not timed).
func BenchmarkSentinelFailover(b *testing.B) {
	var took, startup []time.Duration
	for range b.N {
		b.StopTimer()
		began := time.Now()
		topo := startFailover(b)
		startup = append(startup, time.Since(began))
		b.StartTimer()
		_, d := killPrimaryAndWait(b, topo)
		b.StopTimer()
		took = append(took, d)
		_ = topo.Stop()
		b.StartTimer()
	}
	slices.Sort(took)
	slices.Sort(startup)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(took[0]), "min-failover-ms")
	b.ReportMetric(ms(took[len(took)/2]), "median-failover-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-failover-ms")
	b.ReportMetric(ms(startup[len(startup)/2]), "median-start-ms")
	b.ReportMetric(0, "ns/op")
}

// reportRSS reports the mean total RSS over the iterations, and per server.
func reportRSS(b *testing.B, rss []float64, servers int) {
	var sum float64
	for _, v := range rss {
		sum += v
	}
	mean := sum / float64(len(rss))
	b.ReportMetric(mean, "MB-RSS-total")
	b.ReportMetric(mean/float64(servers), "MB-RSS/server")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/ready")
}

// totalRSS sums VmRSS (MB) of the processes.
func totalRSS(b *testing.B, pids []int) float64 {
	var total float64
	for _, pid := range pids {
		kb, err := residentKB(pid)
		if err != nil {
			b.Fatal(err)
		}
		total += float64(kb) / 1024
	}
	return total
}

// residentKB reads a process's resident set size in kB from /proc/<pid>/status.
func residentKB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS in /proc/%d/status", pid, pid)
}
