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
	// ReportError says why report.html could not be written; the verdict stands regardless.
	ReportError error `json:"-"`
}

// newRunDir makes results/<scenario>/<timestamp>/ with the scenario's text in it (Text), and points
// results/latest at it. Runs started at once into the same results folder (two CI jobs on one
// machine) each get their own folder, and latest ends up at one of them.
func newRunDir(root string, sc *scenarios.Scenario) (string, error) {
	dir, err := rundir.New(filepath.Join(root, sc.Name), time.Now())
	if err != nil {
		return "", fmt.Errorf("create run folder: %w", err)
	}
	text, err := sc.Text()
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
	var sc *scenarios.Scenario
	if _, err := os.Stat(filepath.Join(dir, ScenarioFile)); err == nil {
		if sc, err = scenarios.Load(filepath.Join(dir, ScenarioFile)); err != nil {
			return nil, err
		}
	}
	log, err := checker.Load(filepath.Join(dir, HistoryFile))
	if err != nil {
		return nil, err
	}
	opts := checker.Options{}
	var expect checker.Expect
	name := ""
	if sc != nil {
		opts.StuckAfter, expect, name = stuckAfter(sc), sc.Expect, sc.Name
	}
	v := log.Check(opts)
	v.Inconclusive = expect.Inconclusive(v)
	res := &Result{Dir: dir, Scenario: name, Verdict: v, Mismatches: expect.Match(v)}
	res.Matches = len(res.Mismatches) == 0
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
