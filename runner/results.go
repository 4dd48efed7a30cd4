package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
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
	// ReportError says why report.html could not be written; the verdict stands regardless.
	ReportError error `json:"-"`
}

// newRunDir makes results/<scenario>/<timestamp>/ with the scenario's own text in it, and points
// results/latest at it. Runs started at once into the same results folder (two CI jobs on one
// machine) each get their own folder, and latest ends up at one of them.
func newRunDir(root string, sc *scenarios.Scenario) (string, error) {
	dir, err := rundir.New(filepath.Join(root, sc.Name), time.Now())
	if err != nil {
		return "", fmt.Errorf("create run folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ScenarioFile), sc.Source, 0o644); err != nil {
		return "", fmt.Errorf("copy scenario into run folder: %w", err)
	}
	// latest is a convenience: a run whose link cannot be made is still a good run.
	if rel, err := filepath.Rel(root, dir); err == nil {
		_ = rundir.Link(filepath.Join(root, "latest"), rel)
	}
	return dir, nil
}

// Judge recomputes a run's verdict from its folder alone (history and scenario copy), writes
// verdict.json, and compares the verdict with the scenario's expect block. This is `lockcheck
// check`; a run calls it too, so the two cannot disagree.
func Judge(dir string) (*Result, error) {
	sc, err := scenarios.Load(filepath.Join(dir, ScenarioFile))
	if err != nil {
		return nil, err
	}
	events, err := history.ReadFile(filepath.Join(dir, HistoryFile))
	if err != nil {
		return nil, err
	}
	v := checker.Check(events, checker.Options{StuckAfter: stuckAfter(sc)})
	res := &Result{Dir: dir, Scenario: sc.Name, Verdict: v, Mismatches: sc.Expect.Match(v)}
	res.Matches = len(res.Mismatches) == 0
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, VerdictFile), append(out, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("write verdict: %w", err)
	}
	for _, reg := range resource.Registers {
		if rv, ok := v.Registers[reg]; ok && rv.Applicable {
			_ = checker.Visualize(events, reg, filepath.Join(dir, "linearizability-"+reg+".html"), nemesis.Label)
		}
	}
	res.ReportError = report.Write(dir) // last: it reads verdict.json and links the pages above
	return res, nil
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
