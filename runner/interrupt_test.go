package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/scenarios"
)

// A run interrupted (its context cancelled, as Ctrl-C does) while every kind of fault is in force
// heals them all before it stops the servers: every fault the history opened is closed, and the
// clocks it set are reset. (nemesis/effects_test.go checks the servers' state after such a heal.)
func TestInterruptedRunHealsEveryFaultInForce(t *testing.T) {
	src := `name: interrupted
lock: set-nx-px
nodes: 2
clients: 2
ttl: 500ms
duration: 30s
workload: {think: 10ms, hold: 20ms}
nemesis:
  - {fault: pause, target: n2, at: 200ms, for: 1h}
  - {fault: pause, target: client-2, at: 200ms, for: 1h}
  - {fault: partition, target: client-1, nodes: [n2], at: 200ms}
  - {fault: delay, target: client-1, nodes: [resource], latency: 3s, at: 200ms, for: 1h}
  - {fault: strobe, target: n1, offset: 5s, period: 1s, at: 200ms, for: 1h}
  - {fault: clock, target: n2, offset: 20s, at: 200ms}
`
	path := filepath.Join(t.TempDir(), "interrupted.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var inForce atomic.Int32
	o := testOptions(t)
	o.OnEvent = func(e history.Event) { // called from several goroutines
		if e.Process == history.Nemesis && e.Type == history.Invoke {
			if inForce.Add(1) == 6 {
				time.AfterFunc(1500*time.Millisecond, cancel) // mid-fault: a strobe flip written or due
			}
		}
	}
	res, err := Run(ctx, sc, o)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("want ErrInterrupted, got %v", err)
	}
	events, err := history.ReadFile(filepath.Join(res.Dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]history.Event{}
	reset := map[string]bool{}
	var end int64
	for _, e := range events {
		if e.Process == history.Controller && e.F == history.End {
			end = e.Time
		}
		if e.Process != history.Nemesis {
			continue
		}
		key := fmt.Sprintf("%s/%d", e.F, e.Op)
		switch {
		case e.Type == history.Invoke:
			open[key] = e
		case e.Type == history.OK || e.Type == history.Info:
			if e.Type == history.Info {
				t.Errorf("%s on %s ended with trouble: %s", e.F, e.Target, e.Error)
			}
			if end != 0 {
				t.Errorf("%s on %s healed after the run's end", e.F, e.Target)
			}
			delete(open, key)
		case e.Type == history.Note && e.F == history.Clock && e.Error == "reset at heal":
			reset[e.Target] = true
		}
	}
	if n := inForce.Load(); n != 6 {
		t.Fatalf("%d faults started, want 6", n)
	}
	for k, e := range open {
		t.Errorf("fault %s on %s never healed", k, e.Target)
	}
	if !reset["n1"] || !reset["n2"] {
		t.Errorf("clocks reset at heal: %v, want n1 and n2", reset)
	}
}
