package runner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
)

// A run stopped at any of its phases, by a failure there or by an interruption, leaves the one way
// out: its history ends with the end note, which says why, and no process it started (servers,
// workers) is left running.
func TestARunStoppedAtAnyPhaseWritesItsEndAndLeavesNoProcess(t *testing.T) {
	sc, err := scenarios.New(scenarios.Scenario{Name: "phases", Lock: "set-nx-px", Clients: 2,
		TTL: scenarios.Duration(500 * time.Millisecond), Duration: scenarios.Duration(time.Second),
		Workload: scenarios.Workload{Hold: scenarios.Duration(20 * time.Millisecond), Think: scenarios.Duration(10 * time.Millisecond)},
		// in force whenever the run is stopped after it started: the way out must heal it
		Nemesis: []scenarios.Entry{{Fault: nemesis.Fault{Kind: history.Pause, Target: "n1", For: scenarios.Duration(time.Hour)}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { atPhase = func(context.Context, string) error { return nil } })
	for _, phase := range []string{"prepare", "start servers", "start clients", "run", "finish", "record"} {
		for _, how := range []string{"failure", "interruption"} {
			t.Run(phase+" "+how, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				stop := errors.New("stopped by the test")
				atPhase = func(_ context.Context, p string) error {
					switch {
					case p != phase:
					case how == "failure":
						return stop
					default:
						cancel()
					}
					return nil
				}
				res, err := Run(ctx, sc, testOptions(t))
				if res == nil {
					t.Fatalf("no run folder: %v", err)
				}
				events, rerr := history.ReadFile(filepath.Join(res.Dir, HistoryFile))
				if rerr != nil || len(events) == 0 {
					t.Fatalf("history: %v", rerr)
				}
				last := events[len(events)-1]
				if last.Process != history.Controller || last.F != history.End {
					t.Fatalf("the history ends with %+v, not the end note", last)
				}
				switch {
				case how == "failure" && (!errors.Is(err, stop) || !strings.Contains(last.Error, stop.Error())):
					t.Errorf("run error %v, end note %q: want the failure", err, last.Error)
				case how == "interruption" && (phase == "finish" || phase == "record") && (err != nil || last.Error != ""):
					t.Errorf("interrupted while finishing: run error %v, end note %q; want a run that ran its length", err, last.Error)
				case how == "interruption" && phase == "run" && (!errors.Is(err, ErrInterrupted) || last.Error != ErrInterrupted.Error()):
					t.Errorf("run error %v, end note %q: want %v", err, last.Error, ErrInterrupted)
				case how == "interruption" && phase != "finish" && phase != "record" && (err == nil || last.Error == ""):
					t.Errorf("run error %v, end note %q: want why it stopped", err, last.Error)
				}
				for _, e := range events {
					if e.Process == history.Nemesis && e.Type == history.Invoke && !healed(events, e) {
						t.Errorf("%s on %s never healed", e.F, e.Target)
					}
				}
				if live := proc.Live(); len(live) > 0 {
					t.Errorf("%d processes left running", len(live))
					_ = proc.KillAll()
				}
			})
		}
	}
}

// healed reports whether the fault started by invoke has its completion in the history.
func healed(events []history.Event, invoke history.Event) bool {
	for _, e := range events {
		if e.Process == history.Nemesis && e.Op == invoke.Op && e.F == invoke.F && (e.Type == history.OK || e.Type == history.Info) {
			return true
		}
	}
	return false
}

// The same way out after a real failure: workers that exit at once (no lock client ever ready).
func TestARunWhoseClientsCannotStartEndsAndLeavesNoProcess(t *testing.T) {
	sc, err := scenarios.Load("../scenarios/no-faults-set-nx-px.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions(t)
	o.Worker = []string{"/bin/false"}
	res, err := Run(context.Background(), sc, o)
	if err == nil || !strings.Contains(err.Error(), "start clients") {
		t.Fatalf("want the clients' failure, got %v", err)
	}
	events, rerr := history.ReadFile(filepath.Join(res.Dir, HistoryFile))
	if rerr != nil || len(events) == 0 {
		t.Fatalf("history: %v", rerr)
	}
	if last := events[len(events)-1]; last.F != history.End || last.Error == "" {
		t.Errorf("the history ends with %+v, want the end note with the failure", last)
	}
	if live := proc.Live(); len(live) > 0 {
		t.Errorf("%d processes left running", len(live))
		_ = proc.KillAll()
	}
}
