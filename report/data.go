package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Files of a run folder the report reads (the runner writes them; the names are repeated here so
// that report does not depend on runner).
const (
	historyFile  = "history.jsonl"
	scenarioFile = "scenario.yaml"
	verdictFile  = "verdict.json"
	// ReportFile is the page Write produces.
	ReportFile = "report.html"
)

// Judged is a run's verdict as the runner judged it (verdict.json).
type Judged struct {
	Scenario   string             `json:"scenario"`
	Verdict    checker.Verdict    `json:"verdict"`
	Matches    bool               `json:"matches_expect"`
	Mismatches []checker.Mismatch `json:"mismatches"`
}

// run is everything the report shows, read from one run folder.
type run struct {
	dir      string
	scenario *scenarios.Scenario // nil: the folder has only a history
	judged   Judged
	start    int64 // CLOCK_MONOTONIC of the run's start
	end      int64
	clients  []string
	regs     []string // register names the history mentions, sorted
	holds    []checker.Hold
	faults   []checker.Fault
	acquires []acquire
	accesses []access // a long run keeps only those its detail windows draw
	releases []int64  // completion times of releases that went through
	marks    []checker.Mark
	tokens   map[holdKey]int64 // the fencing token of each hold, by its client and start
	// long: too many holds to draw one by one on one page; the page shows an overview and
	// detail windows (overview.go).
	long    bool
	windows []window
	// completions counts every client operation's completion (throughput), accesses included.
	completions []int64
}

type holdKey struct {
	client string
	t      int64
}

// acquire is one acquire operation (with its retries) and how it ended.
type acquire struct {
	client       string
	invoke, done int64  // done = 0: never completed
	outcome      string // ok, fail, info or "" (never completed)
	token        *int64
	err          string
	role         string
}

// access is one read or write of a critical section, with each register's outcome.
type access struct {
	client string
	f      string // history.Read or history.Write
	cs     int64
	invoke int64
	t      int64 // completion; the invoke when it never completed
	token  *int64
	regs   []checker.RegisterValue
}

func (a access) register(name string) (checker.RegisterValue, bool) {
	for _, r := range a.regs {
		if r.Name == name {
			return r, true
		}
	}
	return checker.RegisterValue{}, false
}

// load reads a run folder: its history, its verdict (judging it if it has none) and its
// scenario, if it has one.
func load(dir string) (*run, error) {
	sc, err := loadScenario(filepath.Join(dir, scenarioFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	l, err := checker.Load(filepath.Join(dir, historyFile))
	if err != nil {
		return nil, err
	}
	var j Judged
	raw, err := os.ReadFile(filepath.Join(dir, verdictFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, verdictFile), err)
		}
	case os.IsNotExist(err):
		// A folder never judged (a run killed outright): judge it here.
		v := l.Check(checker.Options{})
		var expect checker.Expect
		if sc != nil {
			j.Scenario, expect = sc.Name, sc.Expect
		}
		j.Verdict, j.Mismatches = v, expect.Match(v)
		j.Matches = len(j.Mismatches) == 0
	default:
		return nil, err
	}
	return newRun(dir, sc, l, j), nil
}

func newRun(dir string, sc *scenarios.Scenario, l *checker.Log, j Judged) *run {
	r := &run{dir: dir, scenario: sc, judged: j, holds: l.Holds(), faults: l.Faults(), marks: l.Marks()}
	r.start = j.Verdict.RunStart
	r.end = r.start + int64(j.Verdict.RunLength)
	if r.end <= r.start {
		r.start, r.end = l.Bounds()
	}
	r.long = len(r.holds) > maxDrawnHolds
	if r.long {
		r.windows = detailWindows(r)
	}
	r.collect(l)
	return r
}

// collect gathers what the lanes and plots draw.
func (r *run) collect(l *checker.Log) {
	r.tokens = map[holdKey]int64{}
	clients := map[string]bool{}
	if r.scenario != nil {
		for _, name := range r.scenario.ClientNames() {
			clients[name] = true
		}
	}
	for _, c := range l.Clients() {
		clients[c] = true
	}
	l.EachOp(func(o *checker.Op) {
		if o.Outcome == history.OK {
			r.completions = append(r.completions, o.Done)
		}
		switch o.F {
		case history.Acquire:
			a := acquire{client: o.Client, invoke: o.Invoke, done: o.Done, outcome: string(o.Outcome), err: o.Error, role: o.Role}
			if o.Outcome == history.OK && o.Token != nil {
				t := *o.Token
				a.token = &t
				r.tokens[holdKey{o.Client, o.Done}] = t
			}
			r.acquires = append(r.acquires, a)
		case history.Read, history.Write:
			t := o.Invoke
			if o.Outcome != "" {
				t = o.Done
			}
			if r.long && !r.inWindow(t) {
				return
			}
			a := access{client: o.Client, f: o.F, cs: o.CS, invoke: o.Invoke, t: t,
				regs: append([]checker.RegisterValue(nil), o.Registers...)}
			if o.Token != nil {
				tok := *o.Token
				a.token = &tok
			}
			if o.Outcome != history.OK {
				// Failed, timed out or never completed: whatever the client sent, the outcome is
				// unknown on every register (a completion that says otherwise keeps its word).
				known := false
				for _, reg := range a.regs {
					known = known || (o.Outcome != "" && reg.Status != history.Unknown && reg.Status != "")
				}
				if !known {
					for i := range a.regs {
						a.regs[i].Status = history.Unknown
					}
				}
			}
			r.accesses = append(r.accesses, a)
		case history.Release:
			if o.Outcome == history.OK {
				r.releases = append(r.releases, o.Done)
			}
		}
	})
	sort.Slice(r.completions, func(i, j int) bool { return r.completions[i] < r.completions[j] })
	for c := range clients {
		r.clients = append(r.clients, c)
	}
	sort.Slice(r.clients, func(i, j int) bool { return checker.LessClient(r.clients[i], r.clients[j]) })
	r.regs = l.RegisterNames()
	sort.Strings(r.regs)
}

// tokenOf is the fencing token of the acquire that began a hold, if it had one.
func (r *run) tokenOf(h checker.Hold) (int64, bool) {
	t, ok := r.tokens[holdKey{h.Client, h.Start}]
	return t, ok
}

// loadScenario reads the run's copy of its scenario. A run made before the loader's rules
// changed may no longer validate; its report is still wanted, so the file is then read as it is.
// A folder without one gives an error wrapping os.ErrNotExist.
func loadScenario(path string) (*scenarios.Scenario, error) {
	raw, rerr := os.ReadFile(path)
	if rerr != nil {
		return nil, rerr
	}
	sc, err := scenarios.Load(path)
	if err == nil {
		return sc, nil
	}
	var loose scenarios.Scenario
	if yaml.Unmarshal(raw, &loose) != nil || loose.Name == "" {
		return nil, err
	}
	loose.Path, loose.Source = path, raw
	return &loose, nil
}
