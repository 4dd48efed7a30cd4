package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/hunt"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/runner"
)

func newHuntCommand() *cobra.Command {
	var budget, each, ttl time.Duration
	var runs int
	var seed int64
	var faults []string
	var resultsDir, mode, findFlag, server string
	var noShrink bool
	var sc shrinkConfig
	cmd := &cobra.Command{
		Use: "hunt LOCK",
		Short: "Hunt a lock for broken promises under faults aimed where they matter, seed after seed, and shrink " +
			"what it finds (exit 0: nothing found, 1: found, 2: harness error)",
		Long: `Run hunt-mode random packages (docs/HUNTING.md) against a lock on its service, seed after
seed, until a run shows what it looks for (--find) or the budget (--for, --runs) is spent. LOCK
is a design's name (lockcheck list), a library at a version (redsync@v4.0.3) or a design file
(my-lock.yaml).

By default it looks for a broken promise: two clients told they held the lock at the same
time, with no fault on the lock's servers to explain it — a bug of the lock's own. A holder that
outlived its promise (frozen or cut off past its lease: K2, the limit of every lease, which
fencing is for) and double ownership a fault on the servers explains are counted and shown, not
a find (--find explained, or any, to hunt for those too).

Each run: four clients, a 400 ms lease (--ttl; or the service's shortest; after a run whose
servers kept the lock a longer lease than it was given, that lease), three nodes of a service
that replicates by quorum (ZooKeeper, etcd: as deployed), 50 ms holds (for designs
that renew, holds that outlast the lease and its slack, so that a waiter frozen past its own can
see the holder let go), one package that aims each fault at the holder, a waiter or the
overtaken client, at the moments they can matter, for 1.2–3 TTLs; it stops shortly after the
first find. A progress line per run gives the runs, the faults applied so far and the best
finding.

What it finds is shrunk at once (lockcheck shrink; --no-shrink to skip), keeping its class:
the run folder gets shrunk.yaml, the smallest schedule found that shows it every time.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if budget <= 0 && runs <= 0 {
				return &exitError{exitHarness, fmt.Errorf("--for and --runs: give a budget (e.g. --for 2m)")}
			}
			if each <= 0 {
				return &exitError{exitHarness, fmt.Errorf("--each %s: must be positive", each)}
			}
			find, err := hunt.ParseFind(findFlag)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			sc.find = findFlag
			spec := hunt.Spec{Lock: args[0], Faults: faults, Within: each, Mode: mode, Server: server, TTL: ttl}
			first, err := hunt.Scenario(spec)
			if err != nil {
				return &exitError{exitHarness, fmt.Errorf("%w (faults a hunt draws: %s)", err, strings.Join(hunt.ClientKinds(), ", "))}
			}
			if err := runner.CheckMachine(); err != nil {
				return &exitError{exitHarness, err}
			}
			out := cmd.OutOrStdout()
			faults = first.Schedule().Random.Faults // what the package draws, for this design
			fmt.Fprintf(out, "hunt %s for %s under %s (%s mode): each run up to %s, budget %s\n",
				args[0], hunt.FindWords(find), strings.Join(faults, ", "), mode, each, budgetWords(budget, runs))
			ctx := cmd.Context()
			started := time.Now()
			var drawn atomic.Int64
			var seen windowCounts // double ownership that is not a find
			opts := runner.Options{ResultsDir: resultsDir, Logger: logger(cmd), StopAfterOverlap: 300 * time.Millisecond, StopOn: find,
				OnEvent: func(e history.Event) {
					if e.Process == history.Nemesis && e.Type == history.Invoke {
						drawn.Add(1)
					}
				}}
			for n := 1; runs <= 0 || n <= runs; n++ {
				left := budget - time.Since(started)
				if budget > 0 && left < time.Second {
					break
				}
				spec.Seed, spec.Within = seed+int64(n-1), each
				if budget > 0 {
					spec.Within = min(each, left)
				}
				s, err := hunt.Scenario(spec)
				if err != nil {
					return &exitError{exitHarness, err}
				}
				res, err := runner.Run(ctx, s, opts)
				if err != nil {
					return &exitError{exitHarness, err}
				}
				at, found := hunt.FirstViolation(res.Verdict, find)
				best := "none yet"
				if found {
					best = fmt.Sprintf("%s, %s into seed %d", res.Verdict.Outcome, at.Round(10*time.Millisecond), spec.Seed)
				}
				seen.add(res.Verdict.MutualExclusion)
				fmt.Fprintf(out, "run %d (seed %d): %d fault(s) applied so far, %s elapsed; %s; best finding: %s\n",
					n, spec.Seed, drawn.Load(), time.Since(started).Round(time.Second), seen, best)
				if learned, ok := hunt.Learned(res.Verdict); ok && ttl == 0 && !found {
					// Faults sized to a lease the servers do not keep never outlast it.
					spec.TTL = learned
					fmt.Fprintf(out, "%s: the next runs give the lock a %s lease and size their faults to it\n",
						res.Verdict.Lease.Words(), learned)
				}
				if !found {
					_ = os.RemoveAll(res.Dir) // a run that found nothing is not worth keeping
					continue
				}
				fmt.Fprintf(out, "found: %s\nrun folder: %s\n", res.Verdict.Summary, res.Dir)
				if !noShrink {
					sc.logger, sc.verbose = opts.Logger, isVerbose(cmd)
					if _, err := shrinkRun(ctx, res.Dir, sc, out); err != nil {
						var ee *exitError
						if errors.As(err, &ee) && ee.code == exitMismatch {
							return &exitError{exitMismatch, nil} // found, though not shrunk
						}
						return err
					}
				}
				return &exitError{exitMismatch, nil}
			}
			fmt.Fprintf(out, "nothing found: %d fault(s) applied in %s; %s\n", drawn.Load(), time.Since(started).Round(time.Second), seen)
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&budget, "for", 2*time.Minute, "stop after this long (0: only --runs bounds it)")
	f.IntVar(&runs, "runs", 0, "stop after this many runs (0: only --for bounds it)")
	f.DurationVar(&each, "each", 30*time.Second, "each run's length at most")
	f.Int64Var(&seed, "seed", 1, "the first run's seed; each next run takes the next")
	f.StringSliceVar(&faults, "faults", nil, "fault kinds the hunt draws (default "+strings.Join(hunt.DefaultFaults, ",")+
		", and for a lock whose attempt waits the usage steps it offers, abandon; any of "+strings.Join(hunt.ClientKinds(), ", ")+
		", abandon)")
	f.StringVar(&resultsDir, "results", "results", "folder for run folders")
	f.StringVar(&mode, "mode", nemesis.ModeHunt, "how the package aims its faults: hunt (at the holder, a waiter, the overtaken) or random "+
		"(Jepsen's style: any client at any moment; more faults before a find, for shrinking to cut)")
	f.BoolVar(&noShrink, "no-shrink", false, "do not shrink what is found")
	f.DurationVar(&ttl, "ttl", 0, "the lease the lock is given and the faults are sized to (default 400ms, or the service's shortest; "+
		"a run whose servers keep a longer lease than the lock was given sizes the next runs to it)")
	f.StringVar(&server, "server", "", "the lock service's settings, as a scenario's server: block, e.g. \"{version: 3.4.3}\" (etcd's release)")
	f.StringVar(&findFlag, "find", string(hunt.FindBroken), "what a run must show to be a find: "+strings.Join(hunt.Finds, ", ")+
		" (broken: the lock told two clients they held it at once, no fault on its servers explaining it; explained: that, or "+
		"double ownership a server fault explains; any: any double ownership, a holder outliving its lease included)")
	sc.flags(cmd)
	return cmd
}

// windowCounts counts the windows of double ownership a hunt saw, by class.
type windowCounts struct{ runs, outlived, explained, broken, unclassed int }

func (w *windowCounts) add(m checker.MutualExclusion) {
	if len(m.Windows) > 0 {
		w.runs++
	}
	w.outlived += m.Outlived
	w.explained += m.Explained
	w.broken += m.Broken
	if !m.PromisesRecorded {
		w.unclassed += len(m.Windows)
	}
}

func (w windowCounts) String() string {
	if w.runs == 0 {
		return "no double ownership"
	}
	s := fmt.Sprintf("double ownership in %d run(s): %d window(s) a holder outlived its promise (K2), %d explained by a server fault, "+
		"%d broken promise(s)", w.runs, w.outlived, w.explained, w.broken)
	if w.unclassed > 0 {
		s += fmt.Sprintf(", %d not classified", w.unclassed)
	}
	return s
}

func budgetWords(budget time.Duration, runs int) string {
	switch {
	case budget > 0 && runs > 0:
		return fmt.Sprintf("%s or %d runs", budget, runs)
	case runs > 0:
		return fmt.Sprintf("%d runs", runs)
	}
	return budget.String()
}
