package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/hunt"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/shrink"
)

// ShrunkFile is what lockcheck shrink writes into the run folder.
const ShrunkFile = "shrunk.yaml"

// shrinkConfig is how hard a shrink tries.
type shrinkConfig struct {
	k, trials, check int
	keep             bool
	find             string // the class of double ownership to keep (--find; "": the run's worst)
	logger           *slog.Logger
	verbose          bool
}

func (c *shrinkConfig) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&c.k, "k", 2, "a step is taken only when this many trials in a row show the violation")
	f.IntVar(&c.trials, "trials", 60, "at most this many trial runs")
	f.IntVar(&c.check, "check", 10, "runs of the result that measure how often it reproduces (written in shrunk.yaml)")
	f.BoolVar(&c.keep, "keep-trials", false, "keep the trial runs' folders (in RUN_FOLDER/shrink-trials)")
	if cmd.Flags().Lookup("find") == nil { // hunt has its own, which the shrink of its find keeps
		f.StringVar(&c.find, "find", "", "what every trial must show: "+strings.Join(hunt.Finds, ", ")+
			" (default: the run's most serious class of double ownership, so a broken promise shrinks to a broken promise)")
	}
}

func newShrinkCommand() *cobra.Command {
	var c shrinkConfig
	cmd := &cobra.Command{
		Use:   "shrink RUN_FOLDER",
		Short: "Shrink a run that broke mutual exclusion to the fewest, simplest faults that break it every time; write RUN_FOLDER/shrunk.yaml",
		Long: `Shrink a run whose history shows two clients holding the lock at once (a lockcheck hunt
find, a failed matrix cell, any run) to a small deterministic scenario that breaks the lock every
time: a regression test.

It reads the faults the run applied from its history, pins each where it mattered (a fault on the
holder to that client's program point and acquisition, a fault on a waiter to whoever waits), and
runs candidates through the real harness: first a shorter run, then delta debugging over the
faults (drop what is not needed), then each remaining fault made simpler (client-1, its first
occurrence, one link, shorter, a smaller clock step). A step is taken only when --k trials in a
row show the violation; each trial stops shortly after the first double ownership. The result
is run --check more times, and RUN_FOLDER/shrunk.yaml gets the scenario, an expect block stating
the violation, a description in words and the reproduction rate; when the final check showed it
in fewer than all runs, a sometimes: block states that rate instead of the expect block.
lockcheck run shrunk.yaml replays it; dropped into scenarios/ it is a CI gate.

Exit 0: shrunk.yaml written. Exit 1: no planned schedule reproduced the violation (the run's
faults pinned to points, nor at their times), or the result showed it in none of the final
runs: nothing written. Exit 2: harness error, or the run
shows no double ownership.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.logger, c.verbose = logger(cmd), isVerbose(cmd)
			if err := runner.CheckMachine(); err != nil {
				return &exitError{exitHarness, err}
			}
			_, err := shrinkRun(cmd.Context(), args[0], c, cmd.OutOrStdout())
			return err
		},
	}
	c.flags(cmd)
	return cmd
}

func isVerbose(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool("verbose")
	return v
}

// shrinkRun shrinks the run in dir and writes dir/shrunk.yaml; it returns that file's path.
func shrinkRun(ctx context.Context, dir string, c shrinkConfig, out io.Writer) (string, error) {
	if c.k < 1 || c.trials < 1 || c.check < 1 {
		return "", &exitError{exitHarness, errors.New("--k, --trials and --check must be at least 1")}
	}
	v, sc, err := runner.Verdict(dir)
	if err != nil {
		return "", &exitError{exitHarness, err}
	}
	if sc == nil {
		return "", &exitError{exitHarness, fmt.Errorf("%s: no %s: the run's scenario is needed to replay it", dir, runner.ScenarioFile)}
	}
	find := v.MutualExclusion.Worst()
	if c.find != "" {
		if find, err = hunt.ParseFind(c.find); err != nil {
			return "", &exitError{exitHarness, err}
		}
	}
	if !hunt.Found(v, find) {
		what := "double ownership"
		if find != hunt.FindAny {
			what = hunt.FindWords(find)
		}
		what = strings.TrimSuffix(what, "s") // "no broken promise"
		return "", &exitError{exitHarness, fmt.Errorf("%s: the history shows no %s: nothing to shrink", dir, what)}
	}
	events, err := history.ReadFile(filepath.Join(dir, runner.HistoryFile))
	if err != nil {
		return "", &exitError{exitHarness, err}
	}
	at, _ := hunt.FirstViolation(v, find)
	first := v.RunStart + int64(at)
	rep, err := shrink.FromRun(sc, events, first)
	if err != nil {
		return "", &exitError{exitHarness, err}
	}
	fmt.Fprintf(out, "shrink %s: %d fault(s) before the first find (%s; %d after it left out); every trial must show one\n", dir,
		rep.Applied, hunt.FindWords(find), rep.Later)

	trials := filepath.Join(dir, "shrink-trials")
	if !c.keep {
		tmp, err := os.MkdirTemp("", "lockcheck-shrink-")
		if err != nil {
			return "", &exitError{exitHarness, err}
		}
		defer os.RemoveAll(tmp)
		trials = tmp
	}
	trial := func(ctx context.Context, s *scenarios.Scenario) (bool, error) {
		res, err := runner.Run(ctx, s, runner.Options{ResultsDir: trials, Logger: c.logger, StopAfterOverlap: 300 * time.Millisecond,
			StopOn: find})
		if err != nil {
			return false, err
		}
		if !c.keep {
			_ = os.RemoveAll(res.Dir)
		}
		return hunt.Found(res.Verdict, find), nil
	}
	o := shrink.Options{K: c.k, MaxTrials: c.trials}
	if c.verbose {
		o.Log = func(format string, a ...any) { fmt.Fprintf(out, "  "+format+"\n", a...) }
	}
	started := time.Now()
	res, err := shrink.Shrink(ctx, rep.Anchored, trial, o)
	anchored := true
	if errors.Is(err, shrink.ErrNotReproduced) && res.Trials < c.trials {
		fmt.Fprintf(out, "the faults pinned to points and lock states did not reproduce it; trying them at their times\n")
		spent := res.Trials
		o.MaxTrials = c.trials - spent
		res, err = shrink.Shrink(ctx, rep.Timed, trial, o)
		res.Trials += spent
		anchored = false
	}
	if errors.Is(err, shrink.ErrNotReproduced) {
		fmt.Fprintf(out, "no planned schedule reproduced the violation %d times in a row (%d trials): its faults break the lock "+
			"only with timing a schedule does not capture; the run's own scenario replays its seed (%s)\n",
			c.k, res.Trials, filepath.Join(dir, runner.ScenarioFile))
		return "", &exitError{exitMismatch, nil}
	}
	if err != nil {
		return "", &exitError{exitHarness, err}
	}
	took := time.Since(started)
	fmt.Fprintf(out, "shrunk %d → %d fault(s) in %d trial runs, %s%s\n", rep.Applied, res.After, res.Trials, took.Round(time.Second),
		map[bool]string{true: " (trial budget spent)", false: ""}[res.Exhausted])
	if res.Repeats > 0 {
		fmt.Fprintf(out, "no schedule showed it %d times in a row with the fault once; the fault given %d chances in a run did: "+
			"what it breaks hangs on a race decided anew each time\n", c.k, res.Repeats)
	}

	// The final check: how often the result reproduces.
	shown := 0
	for range c.check {
		ok, err := trial(ctx, res.Scenario)
		if err != nil {
			return "", &exitError{exitHarness, err}
		}
		if ok {
			shown++
		}
	}
	if shown == 0 {
		fmt.Fprintf(out, "%s\nreproduced in none of %d runs of the final check: nothing written\n", shrink.Describe(res.Scenario), c.check)
		return "", &exitError{exitMismatch, nil}
	}
	path := filepath.Join(dir, ShrunkFile)
	text, err := shrunkText(res, dir, path, shown, c.check, took, anchored, find)
	if err != nil {
		return "", &exitError{exitHarness, err}
	}
	if err := os.WriteFile(path, text, 0o644); err != nil {
		return "", &exitError{exitHarness, err}
	}
	fmt.Fprintf(out, "%s\nreproduced in %d of %d runs\nwrote %s (lockcheck run %s)\n", shrink.Describe(res.Scenario), shown, c.check, path, path)
	return path, nil
}

// shrunkText is the shrunk scenario as a file: a regression test that expects the violation, of
// the class it was shrunk for.
func shrunkText(res shrink.Result, from, path string, shown, runs int, took time.Duration, anchored bool,
	find checker.WindowClass) ([]byte, error) {
	s := *res.Scenario
	s.Name, s.Path = "shrunk-"+strings.TrimPrefix(s.Name, "shrunk-"), path
	s.Claims, s.Supports, s.Finding, s.Sometimes = nil, "", "", nil
	want, what := checker.Expect{MutualExclusion: "violated"}, "two clients held the lock at once"
	switch find {
	case hunt.FindBroken:
		want.Promises, what = "broken", "the lock broke its promise: two clients held it at once, and no fault on its servers explains it"
	case hunt.FindExplained:
		what = "two clients held the lock at once, a fault on its servers explaining it or worse"
	}
	s.Expect = want
	if shown < runs { // not every run: a rate to check, not an outcome to expect (SCENARIOS.md, sometimes)
		s.Expect = checker.Expect{}
		s.Sometimes = &scenarios.Sometimes{What: what, Expect: want, Rate: fmt.Sprintf("%d/%d", shown, runs), Tolerance: 0.2}
	}
	s.Description = fmt.Sprintf("Shrunk by lockcheck shrink from run %s (%d → %d faults): %s. Two clients then hold the lock at once "+
		"(in %d of %d runs when it was shrunk).", filepath.Base(from), res.Before, res.After, shrink.Describe(res.Scenario), shown, runs)
	how := "faults pinned to program points and lock states"
	if !anchored {
		how = "faults at the times the run applied them"
	}
	if res.Repeats > 0 {
		how += fmt.Sprintf("; the last one given %d chances in a run, as once it breaks the lock only when a race goes one way", res.Repeats)
	}
	s.Comment = fmt.Sprintf("lockcheck shrink of %s: %d → %d fault(s), %d trial runs, %s (%s).\nreproduced in %d of %d runs",
		from, res.Before, res.After, res.Trials, took.Round(time.Second), how, shown, runs)
	sc, err := scenarios.New(s)
	if err != nil {
		return nil, err
	}
	return sc.YAML()
}
