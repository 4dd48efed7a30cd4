package checker

import (
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// lockSerialisedHistory is a healthy run of `cycles` tenures shared round-robin by `clients`
// clients: each asks for the lock again as soon as it released it and waits its turn, so several
// acquires are always pending. Each tenure increments three registers with a fencing token.
// It has 8 events per cycle.
func lockSerialisedHistory(clients, cycles int) []history.Event {
	b := newHistory().start(0)
	names := []string{"unfenced", "fenced-write", "fenced-rw"}
	pending := map[string]float64{} // client → when it invoked its pending acquire
	const tenure = 1.0              // ms
	for k := 0; k < cycles; k++ {
		p := history.Client(k%clients + 1)
		t := float64(k) * tenure
		inv, ok := pending[p]
		if !ok {
			inv = t
		}
		b.acquireToken(p, inv, t+0.1, int64(k+1))
		var regs []reg
		for _, n := range names {
			regs = append(regs, accepted(n, int64(k)))
		}
		b.increment(p, int64(k/clients+1), t+0.2, regs...)
		b.release(p, t+0.999, t+1.05)
		pending[p] = t + 1.1
	}
	final := map[string]int64{}
	for _, n := range names {
		final[n] = int64(cycles)
	}
	return b.final(float64(cycles)*tenure+1, final).end(float64(cycles)*tenure + 1).build()
}

func BenchmarkCheckLockSerialisedHistory10k(b *testing.B) {
	events := lockSerialisedHistory(5, 1250)
	v := Check(events, Options{})
	if !v.MutualExclusion.Holds || v.Liveness.Stuck || v.Liveness.Acquisitions != 1250 {
		b.Fatalf("generated history is not healthy: %s", v.Summary)
	}
	for name, r := range v.Registers {
		if r.Linearizable != Yes || r.LostUpdates != 0 || !r.LostUpdatesKnown {
			b.Fatalf("%s: %+v", name, r)
		}
	}
	b.ReportMetric(float64(len(events)), "events")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Check(events, Options{})
	}
}

func TestTheBenchmarkHistoryIsHealthy(t *testing.T) {
	v := Check(lockSerialisedHistory(5, 100), Options{})
	if !v.MutualExclusion.Holds || v.Liveness.Stuck || v.Liveness.Acquisitions != 100 {
		t.Fatalf("not healthy: %s", v.Summary)
	}
	for name, r := range v.Registers {
		if r.Linearizable != Yes || r.LostUpdates != 0 {
			t.Errorf("%s: %+v", name, r)
		}
	}
}
