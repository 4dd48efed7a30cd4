package cluster

// How long a failover takes: from kill -9 of the primary until a majority of sentinels name the
// replica and it calls itself master. Each iteration starts a fresh topology (1 primary,
// 1 replica, 3 sentinels; start-up is not timed).
//
//	go test -run '^$' -bench SentinelFailover -benchtime 10x ./cluster/

import (
	"sort"
	"testing"
	"time"
)

func BenchmarkSentinelFailover(b *testing.B) {
	var took []time.Duration
	var startup []time.Duration
	for range b.N {
		b.StopTimer()
		began := time.Now()
		f := startFailover(b)
		startup = append(startup, time.Since(began))
		b.StartTimer()
		_, d := killPrimaryAndWait(b, f)
		b.StopTimer()
		took = append(took, d)
		_ = f.Stop()
		b.StartTimer()
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	sort.Slice(startup, func(i, j int) bool { return startup[i] < startup[j] })
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(took[0]), "min-failover-ms")
	b.ReportMetric(ms(took[len(took)/2]), "median-failover-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-failover-ms")
	b.ReportMetric(ms(startup[len(startup)/2]), "median-start-ms")
	b.ReportMetric(0, "ns/op")
}
