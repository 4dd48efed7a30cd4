package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

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

// judged is verdict.json as the runner writes it.
type judged struct {
	Scenario   string             `json:"scenario"`
	Verdict    checker.Verdict    `json:"verdict"`
	Matches    bool               `json:"matches_expect"`
	Mismatches []checker.Mismatch `json:"mismatches"`
}

// run is everything the report shows, read from one run folder.
type run struct {
	dir      string
	scenario *scenarios.Scenario
	judged   judged
	start    int64 // CLOCK_MONOTONIC of the run's start
	end      int64
	clients  []string
	regs     []string // register names the history mentions, sorted
	holds    []checker.Hold
	faults   []checker.Fault
	acquires []acquire
	accesses []access
	releases []int64         // completion times of releases that went through
	notes    []history.Event // client lost / crash notes, drawn on the lanes
	tokens   map[holdKey]int64
	enders   map[holdKey]string // what ended a hold: (client, end time) → event f
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
	regs   map[string]history.Register
}

func load(dir string) (*run, error) {
	sc, err := loadScenario(filepath.Join(dir, scenarioFile))
	if err != nil {
		return nil, err
	}
	events, err := history.ReadFile(filepath.Join(dir, historyFile))
	if err != nil {
		return nil, err
	}
	var j judged
	raw, err := os.ReadFile(filepath.Join(dir, verdictFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, verdictFile), err)
		}
	case os.IsNotExist(err):
		// A folder never judged (a run killed outright): judge it here, without an expect match.
		v := checker.Check(events, checker.Options{})
		j = judged{Scenario: sc.Name, Verdict: v, Mismatches: sc.Expect.Match(v)}
		j.Matches = len(j.Mismatches) == 0
	default:
		return nil, err
	}
	r := &run{dir: dir, scenario: sc, judged: j, holds: checker.Holds(events), faults: checker.Faults(events),
		tokens: map[holdKey]int64{}, enders: map[holdKey]string{}}
	r.start = j.Verdict.RunStart
	r.end = r.start + int64(j.Verdict.RunLength)
	if r.end <= r.start && len(events) > 0 {
		r.start, r.end = events[0].Time, events[len(events)-1].Time
	}
	r.collect(events)
	return r, nil
}

// collect pairs client operations and gathers what the lanes and plots draw.
func (r *run) collect(events []history.Event) {
	type key struct {
		process string
		op      int64
	}
	openAcq := map[key]int{}
	openAcc := map[key]int{}
	clients := map[string]bool{}
	regs := map[string]bool{}
	for _, name := range r.scenario.ClientNames() {
		clients[name] = true
	}
	for _, e := range events {
		for name := range e.Registers {
			regs[name] = true
		}
		if !strings.HasPrefix(e.Process, "client-") {
			if e.Process == history.Controller && e.F == history.Crash && e.Target != "" {
				r.notes = append(r.notes, e)
				r.enders[holdKey{e.Target, e.Time}] = "crash"
			}
			if e.Process == history.Nemesis && e.F == history.Kill && e.Type == history.OK {
				r.enders[holdKey{e.Target, e.Time}] = "kill"
			}
			continue
		}
		clients[e.Process] = true
		k := key{e.Process, e.Op}
		switch {
		case e.F == history.Acquire && e.Type == history.Invoke:
			openAcq[k] = len(r.acquires)
			r.acquires = append(r.acquires, acquire{client: e.Process, invoke: e.Time, role: e.Role})
		case e.F == history.Acquire:
			if i, ok := openAcq[k]; ok {
				delete(openAcq, k)
				a := &r.acquires[i]
				a.done, a.outcome, a.token, a.err = e.Time, string(e.Type), e.Token, e.Error
				if e.Type == history.OK && e.Token != nil {
					r.tokens[holdKey{e.Process, e.Time}] = *e.Token
				}
			}
		case (e.F == history.Read || e.F == history.Write) && e.Type == history.Invoke:
			openAcc[k] = len(r.accesses)
			r.accesses = append(r.accesses, access{client: e.Process, f: e.F, cs: e.CS, invoke: e.Time, t: e.Time, token: e.Token, regs: e.Registers})
		case e.F == history.Read || e.F == history.Write:
			if i, ok := openAcc[k]; ok {
				delete(openAcc, k)
				a := &r.accesses[i]
				a.t = e.Time
				if e.Registers != nil {
					a.regs = e.Registers
				}
				if e.Type != history.OK && e.Registers == nil {
					a.regs = markAll(a.regs, history.Unknown)
				}
			}
		case e.F == history.Release && e.Type == history.OK:
			r.releases = append(r.releases, e.Time)
		case e.F == history.Release && e.Type == history.Invoke:
			r.enders[holdKey{e.Process, e.Time}] = "release"
		case e.F == history.Lost:
			r.notes = append(r.notes, e)
			r.enders[holdKey{e.Process, e.Time}] = "lost"
		}
	}
	// An access never completed: its outcome is unknown on every register.
	for _, i := range openAcc {
		r.accesses[i].regs = markAll(r.accesses[i].regs, history.Unknown)
	}
	for c := range clients {
		r.clients = append(r.clients, c)
	}
	sort.Slice(r.clients, func(i, j int) bool { return checker.LessClient(r.clients[i], r.clients[j]) })
	for name := range regs {
		r.regs = append(r.regs, name)
	}
	sort.Strings(r.regs)
}

func markAll(regs map[string]history.Register, status string) map[string]history.Register {
	out := make(map[string]history.Register, len(regs))
	for name, reg := range regs {
		reg.Status = status
		out[name] = reg
	}
	return out
}

// loadScenario reads the run's copy of its scenario. A run made before the loader's rules
// changed may no longer validate; its report is still wanted, so the file is then read as it is.
func loadScenario(path string) (*scenarios.Scenario, error) {
	sc, err := scenarios.Load(path)
	if err == nil {
		return sc, nil
	}
	raw, rerr := os.ReadFile(path)
	if rerr != nil {
		return nil, err
	}
	var loose scenarios.Scenario
	if yaml.Unmarshal(raw, &loose) != nil || loose.Name == "" {
		return nil, err
	}
	loose.Path, loose.Source = path, raw
	return &loose, nil
}
