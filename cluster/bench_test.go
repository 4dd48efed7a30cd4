package cluster

// Start-up (BENCH.md figure 6): time from nothing to a ready cluster, and the servers' resident
// memory once ready. Stopping is not timed.
//
//	go test -run '^$' -bench 'Start' -benchtime 5x ./cluster/

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStartRedis: 5 lock nodes (under libfaketime) + the resource, as a Redlock run starts.
func BenchmarkStartRedis(b *testing.B) {
	if err := CheckBinaries(); err != nil {
		b.Fatal(err)
	}
	var rss []float64
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, err := Start(ctx, Options{Dir: b.TempDir(), LockNodes: 5})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		var pids []int
		for _, r := range c.Servers() {
			pids = append(pids, r.Process().Pid())
		}
		rss = append(rss, totalRSS(b, pids))
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportRSS(b, rss, 6)
}

// BenchmarkStartZooKeeper: a 3-server ensemble with a leader elected.
func BenchmarkStartZooKeeper(b *testing.B) {
	if err := CheckZooKeeper(); err != nil {
		b.Fatal(err)
	}
	var rss []float64
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		z, err := StartZooKeeper(ctx, ZooKeeperOptions{Dir: b.TempDir(), Servers: 3})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		var pids []int
		for _, s := range z.Servers {
			pids = append(pids, s.Process().Pid())
		}
		rss = append(rss, totalRSS(b, pids))
		if err := z.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportRSS(b, rss, 3)
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
