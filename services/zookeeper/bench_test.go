package zookeeper

// Start-up (BENCH.md figure 6): time from nothing to a ready ensemble (every server answers
// `srvr`, one leads), and the servers' resident memory once ready. Stopping is not timed.
//
//	go test -run '^$' -bench 'Start' -benchtime 5x ./services/zookeeper/

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/services"
)

// BenchmarkStartZooKeeper: a 3-server ensemble with a leader elected.
func BenchmarkStartZooKeeper(b *testing.B) {
	if err := local.CheckNeeds(needs()); err != nil {
		b.Fatal(err)
	}
	d, err := locks.Get("zk")
	if err != nil {
		b.Fatal(err)
	}
	var rss []float64
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		topo, err := services.StartKind(ctx, services.Spec{Design: d, Nodes: 3}, services.Options{Dir: b.TempDir()})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		z := topo.Instance.(*Ensemble)
		var kb int
		for _, name := range z.Names() {
			kb += vmRSS(b, pid(z.Server(name)))
		}
		rss = append(rss, float64(kb)/1024)
		if err := topo.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	var sum float64
	for _, v := range rss {
		sum += v
	}
	mean := sum / float64(len(rss))
	b.ReportMetric(mean, "MB-RSS-total")
	b.ReportMetric(mean/3, "MB-RSS/server")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/ready")
}
