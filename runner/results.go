package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/rundir"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/resource"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Files in a run folder.
const (
	HistoryFile  = "history.jsonl"
	ScenarioFile = "scenario.yaml"
	VerdictFile  = "verdict.json"
)

// Result is a judged run.
type Result struct {
	Dir        string             `json:"dir"`
	Scenario   string             `json:"scenario"`
	Verdict    checker.Verdict    `json:"verdict"`
	Matches    bool               `json:"matches_expect"`
	Mismatches []checker.Mismatch `json:"mismatches,omitempty"`
	// Shows is set for a scenario with a `sometimes:` block: whether this run showed that
	// outcome (its rate over many runs is the finding, not any one run).
	Shows *bool `json:"shows_sometimes,omitempty"`
	// ReportError says why report.html could not be written; the verdict stands regardless.
	ReportError error `json:"-"`

	// ClientLocks is each client's design, when they differ (the scenario's client_locks).
	ClientLocks map[string]string `json:"client_locks,omitempty"`
}

// newRunDir makes results/<scenario>/<timestamp>/ with the scenario's text in it (Text), and points
// results/latest at it. Runs started at once into the same results folder (two CI jobs on one
// machine) each get their own folder, and latest ends up at one of them.
func newRunDir(root string, sc *scenarios.Scenario) (string, error) {
	dir, err := rundir.New(filepath.Join(root, sc.Name), time.Now())
	if err != nil {
		return "", fmt.Errorf("create run folder: %w", err)
	}
	text, err := sc.RunText()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ScenarioFile), text, 0o644); err != nil {
		return "", fmt.Errorf("copy scenario into run folder: %w", err)
	}
	// latest is a convenience: a run whose link cannot be made is still a good run.
	if rel, err := filepath.Rel(root, dir); err == nil {
		_ = rundir.Link(filepath.Join(root, "latest"), rel)
	}
	return dir, nil
}

// Judge recomputes a run's verdict from its folder alone, writes verdict.json, porcupine's page
// for each register found not linearizable, and report.html, and compares the verdict with the
// scenario's expect block. This is `lockcheck check`; a run calls it too, so the two cannot
// disagree. A folder with only history.jsonl is judged too: without scenario.yaml there are no
// expectations, and only an inconclusive run fails.
func Judge(dir string) (*Result, error) {
	sc, log, v, err := judge(dir)
	if err != nil {
		return nil, err
	}
	var expect checker.Expect
	name := ""
	if sc != nil {
		expect, name = sc.Expect, sc.Name
	}
	res := &Result{Dir: dir, Scenario: name, Verdict: v, Mismatches: expect.Match(v)}
	if sc != nil {
		res.ClientLocks = sc.ClientLockNames()
	}
	res.Matches = len(res.Mismatches) == 0
	if sc != nil && sc.Sometimes != nil {
		shows := sc.Sometimes.Shows(v)
		res.Shows = &shows
	}
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, VerdictFile), append(out, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("write verdict: %w", err)
	}
	for _, reg := range resource.Registers {
		page := filepath.Join(dir, "linearizability-"+reg+".html")
		_ = os.Remove(page) // from an earlier judging: it may no longer apply
		if rv, ok := v.Registers[reg]; ok && rv.Piece != nil {
			_ = log.Visualize(reg, page, nemesis.Label)
		}
	}
	// Last: it links the pages above.
	res.ReportError = report.WriteFrom(dir, sc, log, report.Judged{Scenario: name, Verdict: v, Matches: res.Matches, Mismatches: res.Mismatches})
	return res, nil
}

// Verdict judges a run folder as Judge does and writes nothing: how a run of an earlier release
// is judged again by this checker (lockcheck matrix --baseline). It returns the run's scenario too
// (nil when the folder has none).
func Verdict(dir string) (checker.Verdict, *scenarios.Scenario, error) {
	sc, _, v, err := judge(dir)
	return v, sc, err
}

// judge reads a run folder and judges its history with the options its scenario sets.
func judge(dir string) (*scenarios.Scenario, *checker.Log, checker.Verdict, error) {
	var sc *scenarios.Scenario
	if _, err := os.Stat(filepath.Join(dir, ScenarioFile)); err == nil {
		if sc, err = scenarios.Load(filepath.Join(dir, ScenarioFile)); err != nil {
			return nil, nil, checker.Verdict{}, err
		}
	}
	log, err := checker.Load(filepath.Join(dir, HistoryFile))
	if err != nil {
		return nil, nil, checker.Verdict{}, err
	}
	opts := checker.Options{}
	var expect checker.Expect
	if sc != nil {
		opts.StuckAfter, expect = stuckAfter(sc), sc.Expect
		opts.StarvedAfter, opts.FirstComeFirstServed = starvedAfter(sc), sc.Design().Fair
		opts.KeepsPlace, opts.AttemptBound = keepsPlace(sc), sc.Workload.AttemptBound()
	}
	v := log.Check(opts)
	v.Inconclusive = expect.Inconclusive(v)
	return sc, log, v, nil
}

// stuckAfter is how long the lock may stay unobtainable at the end of a run before the verdict
// calls it stuck: well past any lease, so a lease that frees itself is never called stuck.
func stuckAfter(sc *scenarios.Scenario) time.Duration {
	d := 3 * sc.TTL.D()
	if min := sc.Workload.AcquireTimeout.D() / 2; d < min {
		d = min
	}
	if d < time.Second {
		d = time.Second
	}
	return d
}

// starvedAfter is how long a client may be passed over (ask in vain while others get the lock)
// before the verdict calls it starved, unless the scenario sets it (expect.liveness.starved_after):
// the larger of what makes a lock stuck (stuckAfter: a lease may keep one client out for a while
// without anything being wrong, e.g. a waiter dropped from a queue sleeps until the lease it was
// told has passed) and twice a turn in line (every other client holding once before it). The
// checker also asks for more acquisitions of others in that time than bad luck explains.
func starvedAfter(sc *scenarios.Scenario) time.Duration {
	if d := sc.Expect.StarvedAfter(); d > 0 {
		return d.D()
	}
	turn := time.Duration(max(sc.Clients-1, 1)) * (sc.Workload.Hold.D() + sc.Workload.Think.D())
	return max(stuckAfter(sc), 2*turn)
}

// keepsPlace is how long the first attempt of an acquire op surely waits in a queued lock's line
// (checker.Options.KeepsPlace): the worker bounds an attempt (workloads.Workload.AttemptBound),
// and a client may give up one command timeout early to leave the line in time (redis-fair,
// redisson). At least a millisecond: 0 would mean for good.
func keepsPlace(sc *scenarios.Scenario) time.Duration {
	wl := sc.Workload
	return max(wl.AttemptBound()-wl.Timeout.D(), time.Millisecond)
}
