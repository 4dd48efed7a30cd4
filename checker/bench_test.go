package checker

// Checker throughput (BENCH.md figure 3): events per second and peak heap of Check (porcupine on
// every register plus the ownership-interval, lost-update and liveness checks) on generated
// histories of growing size.
//
//	go test -run '^$' -bench 'Check' -benchmem -count 3 ./checker/

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

var benchRegisters = []string{"unfenced", "fenced-write", "fenced-rw"}

// serialisedHistory is a healthy run of `cycles` tenures shared round-robin by `clients` clients:
// each asks for the lock again as soon as it released it and waits its turn, so several acquires
// are always pending. Each tenure increments three registers with a fencing token; it has 8
// events per cycle. With unknownEvery > 0, every unknownEvery-th critical section's write times
// out: the client never learns whether it took effect (info). A seeded coin decides whether it
// did, and later sections read whichever value resulted. Each such section stays open until the
// end of the run (it may have taken effect at any later moment), so by the end
// cycles/unknownEvery operations are concurrent: the hard case for a linearizability checker.
func serialisedHistory(clients, cycles, unknownEvery int) []history.Event {
	b := newHistory().start(0)
	coin := rand.New(rand.NewPCG(1, 2))
	pending := map[string]float64{} // client → when it invoked its pending acquire
	const tenure = 1.0              // ms
	var value int64                 // every register's true value
	for k := 0; k < cycles; k++ {
		p := history.Client(k%clients + 1)
		t := float64(k) * tenure
		inv, ok := pending[p]
		if !ok {
			inv = t
		}
		b.acquireToken(p, inv, t+0.1, int64(k+1))
		var regs []reg
		for _, n := range benchRegisters {
			regs = append(regs, accepted(n, value))
		}
		cs := int64(k/clients + 1)
		if unknownEvery > 0 && k%unknownEvery == unknownEvery-1 {
			var writes []reg
			for _, n := range benchRegisters {
				writes = append(writes, unknown(n, value+1))
			}
			b.read(p, cs, t+0.2, t+0.45, regs...).write(p, cs, t+0.7, t+0.95, writes...)
			if coin.IntN(2) == 0 {
				value++
			}
		} else {
			b.increment(p, cs, t+0.2, regs...)
			value++
		}
		b.release(p, t+0.999, t+1.05)
		pending[p] = t + 1.1
	}
	final := map[string]int64{}
	for _, n := range benchRegisters {
		final[n] = value
	}
	return b.final(float64(cycles)*tenure+1, final).end(float64(cycles)*tenure + 1).build()
}

// BenchmarkCheck judges lock-serialised histories of 10k, 100k and 1M events, and histories of
// 10k, 100k and 300k events in which 1 in 10 writes has an unknown outcome. ns/op is one Check; events/s and the peak heap
// (live and not yet swept, above what was in use before, sampled every millisecond) show how the
// cost grows with size.
func BenchmarkCheck(b *testing.B) {
	for _, c := range []struct {
		name   string
		cycles int // 8 events each (indeterminate ones too)
		every  int // 1 in every writes unknown; 0: none
	}{
		{"serialised/events=10k", 1250, 0},
		{"serialised/events=100k", 12500, 0},
		{"serialised/events=1M", 125000, 0},
		{"indeterminate-1in10/events=10k", 1250, 10},
		{"indeterminate-1in10/events=100k", 12500, 10},
		{"indeterminate-1in10/events=300k", 37500, 10},
		{"indeterminate-1in10/events=1M", 125000, 10},
	} {
		b.Run(c.name, func(b *testing.B) {
			events := serialisedHistory(5, c.cycles, c.every)
			opts := Options{LinearizabilityTimeout: 10 * time.Minute} // a figure, not a verdict under a deadline
			var v Verdict
			peak := peakHeap(func() {
				b.ResetTimer()
				for range b.N {
					v = Check(events, opts)
				}
				b.StopTimer()
			})
			if err := healthy(v, c.cycles); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(events)), "events")
			b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(peak)/(1<<20), "MB-peak-heap")
		})
	}
}

// healthy says what is wrong with the verdict on a generated history, if anything.
func healthy(v Verdict, cycles int) error {
	if !v.MutualExclusion.Holds || v.Liveness.Stuck || v.Liveness.Acquisitions != cycles {
		return fmt.Errorf("generated history is not healthy: %s", v.Summary)
	}
	for name, r := range v.Registers {
		if r.Linearizable != Yes {
			return fmt.Errorf("%s: linearizable %q, want yes", name, r.Linearizable)
		}
	}
	return nil
}

// peakHeap runs f and returns the largest heap (objects live or not yet swept) seen while it ran,
// above the heap in use before it started.
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak atomic.Uint64
	peak.Store(base)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load() - base
}

func TestTheBenchmarkHistoriesAreHealthy(t *testing.T) {
	for _, every := range []int{0, 10, 3} {
		events := serialisedHistory(5, 100, every)
		v := Check(events, Options{})
		if err := healthy(v, 100); err != nil {
			t.Fatalf("1 in %d unknown: %v", every, err)
		}
		if every == 0 {
			for name, r := range v.Registers {
				if r.LostUpdates != 0 || !r.LostUpdatesKnown {
					t.Errorf("%s: %+v", name, r)
				}
			}
		}
	}
}

// A history cannot pass just because it is long: one stale read in the middle of a large
// serialised history must be found.
func TestAStaleReadInALongHistoryIsNotLinearizable(t *testing.T) {
	events := serialisedHistory(5, 3000, 0)
	for i, e := range events {
		if e.F == history.Read && e.Type == history.OK && e.CS == 300 && e.Process == "client-2" {
			r := e.Registers["unfenced"]
			r.Value--
			regs := map[string]history.Register{}
			for k, v := range e.Registers {
				regs[k] = v
			}
			regs["unfenced"] = r
			events[i].Registers = regs
			break
		}
	}
	v := Check(events, Options{})
	if got := v.Registers["unfenced"].Linearizable; got != No {
		t.Fatalf("unfenced with a stale read: linearizable %q, want no", got)
	}
	if got := v.Registers["fenced-rw"].Linearizable; got != Yes {
		t.Fatalf("fenced-rw untouched: linearizable %q, want yes", got)
	}
}
