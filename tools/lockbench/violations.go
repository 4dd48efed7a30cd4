package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
)

// firstViolations is figure 4: for each shipped scenario that expects mutual exclusion to be
// violated, the time from the run's start to its first double-ownership window; for scenarios
// with a random nemesis schedule, over many seeds.
func firstViolations(ctx context.Context, c config) (string, error) {
	exe, err := self()
	if err != nil {
		return "", err
	}
	files, err := scenarioFiles(c.scenarioDir)
	if err != nil {
		return "", err
	}
	type row struct {
		name, lock string
		random     bool
		duration   time.Duration
		firsts     []float64 // ns from start, runs that violated
		runs       int
		errs       []string
	}
	var rows []*row
	for _, f := range files {
		sc, err := scenarios.Load(f)
		if err != nil {
			rows = append(rows, &row{name: filepath.Base(f), errs: []string{err.Error()}})
			continue
		}
		// Known unsafe: expected to violate; or a random schedule that expects nothing either way
		// (random-pauses-set-nx-px: whether the lock breaks depends on the seed).
		random := hasRandom(sc)
		if !strings.Contains(sc.Name, c.only) {
			continue
		}
		if sc.Expect.MutualExclusion != "violated" && !(random && sc.Expect.MutualExclusion == "") {
			continue
		}
		r := &row{name: sc.Name, lock: sc.Lock, random: random, duration: sc.Duration.D()}
		rows = append(rows, r)
		n := c.runs
		if random {
			n = c.seeds
		}
		for i := 0; i < n && ctx.Err() == nil; i++ {
			run := sc
			if random {
				if run, err = withSeed(sc, int64(i+1)); err != nil {
					r.errs = append(r.errs, err.Error())
					continue
				}
			}
			fmt.Fprintf(os.Stderr, "lockbench:   %s run %d/%d\n", sc.Name, i+1, n)
			res, err := runUntilViolation(ctx, run, c.results, exe)
			if err != nil {
				r.errs = append(r.errs, err.Error())
				continue
			}
			r.runs++
			if w := res.Verdict.MutualExclusion.Windows; len(w) > 0 {
				first := w[0].Offset
				for _, x := range w {
					first = min(first, x.Offset)
				}
				r.firsts = append(r.firsts, float64(first))
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "## 4. Time to first violation\n\n")
	fmt.Fprintf(&b, "Command: `lockbench` (tools/lockbench/violations.go): `runner.Run` of every scenario in `%s/` (and its "+
		"subfolders) whose `expect` says `mutual_exclusion: violated`, %d run(s) each, and of those with a random nemesis "+
		"schedule whose `expect` leaves mutual exclusion open, over seeds 1..%d instead of their own seed. The figure is the offset of the earliest "+
		"double-ownership window from the run's start (verdict.json `mutual_exclusion.windows[].offset`). "+
		"To save time a run is stopped (as Ctrl-C stops it: faults healed, clients released, history judged) %s after the "+
		"history first shows two holders, which leaves the earliest window as it was; `make test` runs every scenario to "+
		"its end and checks its whole expect block.\n\n", c.scenarioDir, c.runs, c.seeds, stopGrace)
	b.WriteString("| scenario | lock | schedule | run length | runs | violated | first violation after |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		sched := "deterministic"
		if r.random {
			sched = "random, per seed"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %d | %d | %s |\n", r.name, r.lock, sched, r.duration, r.runs, len(r.firsts),
			spreadOf(r.firsts).format(dur))
		for _, e := range r.errs {
			fmt.Fprintf(&b, "| | | error: %s | | | | |\n", strings.ReplaceAll(firstLine(e), "|", "\\|"))
		}
	}
	for _, r := range rows {
		if r.random && len(r.firsts) > 0 {
			sorted := append([]float64(nil), r.firsts...)
			sort.Float64s(sorted)
			var parts []string
			for _, v := range sorted {
				parts = append(parts, dur(v))
			}
			fmt.Fprintf(&b, "\n`%s`, every seed's first violation, sorted: %s.\n", r.name, strings.Join(parts, ", "))
		}
	}
	b.WriteString("\nThe deterministic scenarios stop a client at a program point, so the first overlap comes when " +
		"the paused holder's lease (or session) runs out and the next client takes the lock: the scenario's own " +
		"stagger, TTL and pause set it, not chance. Under random pauses whether and when it happens depends on where " +
		"a pause lands relative to a hold: the seed fixes the schedule of pauses, not the clients' timing, so the same " +
		"seed can break the lock in one run and not in the next.\n")
	if c.runs == 1 {
		b.WriteString("\nEach deterministic scenario ran once, to keep `make bench` under 15 minutes; " +
			"`make bench BENCHFLAGS=--runs=3` gives each a spread (about a minute and a half more per extra run).\n")
	}
	return b.String(), ctx.Err()
}

// stopGrace is how long a run goes on after the history first shows two holders: events of
// the same moment still in a worker's pipe land in the history before it is judged.
const stopGrace = 300 * time.Millisecond

// runUntilViolation runs sc in a results folder of its own and, while it runs, judges its history
// so far every 100 ms; once mutual exclusion is broken it stops the run stopGrace later. The
// earliest window cannot change after that: its start and both holders' events are recorded.
func runUntilViolation(ctx context.Context, sc *scenarios.Scenario, results, exe string) (*runner.Result, error) {
	dir, err := os.MkdirTemp(results, sc.Name+"-")
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		historyFile := filepath.Join(dir, "latest", runner.HistoryFile)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			events, err := history.ReadFile(historyFile)
			if err != nil || checker.Check(events, checker.Options{}).MutualExclusion.Holds {
				continue
			}
			select {
			case <-done:
			case <-time.After(stopGrace):
				stop()
			}
			return
		}
	}()
	res, err := runner.Run(runCtx, sc, runner.Options{ResultsDir: dir, Worker: []string{exe, "worker"}})
	close(done)
	<-watched
	if errors.Is(err, runner.ErrInterrupted) && ctx.Err() == nil {
		err = nil // stopped by us, after the violation
	}
	return res, err
}

// scenarioFiles lists dir/*.yaml and dir/*/*.yaml.
func scenarioFiles(dir string) ([]string, error) {
	top, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sub, err := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	if err != nil {
		return nil, err
	}
	files := append(top, sub...)
	if len(files) == 0 {
		return nil, fmt.Errorf("no scenarios in %s", dir)
	}
	sort.Slice(files, func(i, j int) bool { return filepath.Base(files[i]) < filepath.Base(files[j]) })
	return files, nil
}

func hasRandom(sc *scenarios.Scenario) bool {
	for _, f := range sc.Nemesis {
		if f.Random != nil {
			return true
		}
	}
	return false
}

// withSeed is a copy of sc with another seed; the run folder's copy says so.
func withSeed(sc *scenarios.Scenario, seed int64) (*scenarios.Scenario, error) {
	c := *sc
	c.Seed = seed
	c.Comment = fmt.Sprintf("%s with seed %d (lockbench; the file says %d)", sc.Path, seed, sc.Seed)
	return scenarios.New(c)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
