package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/debate"
	"github.com/lockcheck/lockcheck/internal/shard"
	"github.com/lockcheck/lockcheck/junit"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
)

func newDebateCommand() *cobra.Command {
	var o debate.Options
	var resultsDir, out, record, condition, repeatability, junitFile, provider, endpoints, shardFlag string
	cmd := &cobra.Command{
		Use:   "debate",
		Short: "Run the debate scenarios and write DEBATE.md: claim → scenario → observed verdict → side (exit 1: a verdict differs from its file)",
		Long: `Run every scenario in scenarios/debate/ against real servers and write a Markdown report:
for each claim of the Kleppmann/antirez debate, the scenario that tests it, the verdict observed,
whether it matched the scenario's expect block, the side it supports, and the command to
reproduce it. Repeatability figures come from a stored record (--repeatability), made by
running with --count 20 --seeds 20 --record FILE, once quiet (--parallel 1) and once loaded
(--parallel 2): make debate-repeat. A scenario whose outcome hangs on timing states how often it
shows (its sometimes: block); it is judged against that rate, every other one must match its
expect block in every run. Next to the report (--out) go its JSON
(DEBATE.json for DEBATE.md) and, with --junit, a copy of the JUnit report (DEBATE.junit.xml).

Across CI jobs: --shard K/N runs part K of N of the scenarios (a scenario's part depends only on
its file name); lockcheck merge then combines the jobs' reports into one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sh, err := shard.Parse(shardFlag)
			if err != nil {
				return &exitError{exitHarness, fmt.Errorf("--shard: %w", err)}
			}
			if sh.Enabled() && record != "" {
				return &exitError{exitHarness, fmt.Errorf("--record with --shard: a repeatability record must hold every scenario")}
			}
			// Outside lockcheck's repository the default folders are the shipped copies.
			if o.Dir, err = scenarios.ShippedFolder(o.Dir); err != nil {
				return &exitError{exitHarness, err}
			}
			if repeatability != "" {
				if repeatability, err = scenarios.ShippedFolder(repeatability); err != nil {
					return &exitError{exitHarness, err}
				}
			}
			all, err := debate.Load(o)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			list := debate.Select(all, sh)
			if err := runner.CheckMachine(); err != nil {
				return &exitError{exitHarness, err}
			}
			w := cmd.OutOrStdout()
			o.Runner = runner.Options{ResultsDir: resultsDir, Logger: logger(cmd), Provider: provider, ProviderConfig: endpoints}
			suite := junit.Suite{Name: "lockcheck debate"}
			o.OnRun = func(name string, i, n int, took time.Duration, res *runner.Result, err error) {
				suite.Cases = append(suite.Cases, runCase(name, i, n, took, res, err))
				status := "harness error: " + fmt.Sprint(err)
				if err == nil {
					status = "matches expect"
					if !res.Matches {
						status = "DOES NOT match expect"
					}
					if res.Shows != nil && *res.Shows {
						status += " (showed its timing-dependent outcome)"
					}
					status += ": " + debate.Observed(res.Verdict)
				}
				fmt.Fprintf(w, "%-40s %2d/%-2d %s\n", name, i, n, status)
			}
			started := time.Now()
			rows, runErr := debate.Run(cmd.Context(), list, o)
			wall := time.Since(started)
			command := "lockcheck " + strings.Join(os.Args[1:], " ")
			if record != "" {
				prov := provider
				if prov == "" {
					prov = "local"
				}
				if condition == "" {
					condition = debate.Condition(o.Parallel)
				}
				m := debate.Measurement{Condition: condition, Parallel: o.Parallel, Provider: prov, Measured: started,
					Command: command, Machine: debate.Machine(), Wall: wall, Rows: rows}
				if err := debate.WriteRecord(record, m, len(o.Only) > 0); err != nil {
					return &exitError{exitHarness, err}
				}
			}
			rec, err := debate.ReadRecord(repeatability)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			res := debate.Result{Generated: started, Command: command, Wall: wall, Count: o.Count, Seeds: o.Seeds,
				Interrupted: runErr != nil, ResultsDir: resultsDir, Out: out, Rows: rows, Record: rec}
			for _, sc := range all {
				res.Scenarios = append(res.Scenarios, debate.ShardKey(sc.Path))
			}
			if sh.Enabled() {
				res.Shard = &sh
			}
			var junitSuite *junit.Suite
			if junitFile != "" {
				junitSuite = &suite
			}
			if err := writeDebate(out, junitFile, res, junitSuite); err != nil {
				return err
			}
			fmt.Fprintf(w, "\nwrote %s (%s)\n", out, wall.Round(time.Second))
			if runErr != nil {
				return &exitError{exitHarness, runErr}
			}
			return debateExit(w, rows)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "scenarios", "scenarios/debate", "folder of debate scenarios")
	f.StringSliceVar(&o.Only, "only", nil, "run only these scenarios (by name)")
	f.IntVar(&o.Count, "count", 1, "runs of each deterministic scenario")
	f.IntVar(&o.Seeds, "seeds", 1, "seeds (1..N) for each scenario with a random schedule")
	f.StringVar(&resultsDir, "results", "results", "folder for run folders")
	f.StringVar(&out, "out", "results/DEBATE.md", "where to write the report")
	f.StringVar(
		&record,
		"record",
		"",
		"also store these runs in this repeatability record, as the measurement of this provider and condition (replacing an earlier one; "+
			"with --only, replacing just those scenarios' rows)",
	)
	f.StringVar(&condition, "condition", "", "the condition the record names (default: quiet with --parallel 1, loaded with more)")
	f.IntVar(
		&o.Parallel,
		"parallel",
		1,
		"runs side by side (each has its own servers, ports and folder); 2 makes every run share the machine with another, the loaded "+
			"condition of make debate-repeat",
	)
	f.StringVar(&repeatability, "repeatability", "scenarios/debate/repeatability.json", "repeatability record to show")
	f.StringVar(&junitFile, "junit", "", "also write JUnit XML here: one test case per run")
	addProviderFlag(cmd, &provider, &endpoints)
	f.StringVar(&shardFlag, "shard", "", "run only part K of N of the scenarios (e.g. 2/3), for a CI job matrix; lockcheck merge combines the parts")
	return cmd
}

// writeDebate writes the report to out, its Result next to it (debate.JSONPath) and, when
// suite is given, the JUnit report to junitFile with a copy next to the report
// (debate.JUnitPath) for lockcheck merge.
func writeDebate(out, junitFile string, res debate.Result, suite *junit.Suite) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return &exitError{exitHarness, err}
	}
	var md strings.Builder
	res.Report().Markdown(&md)
	if err := os.WriteFile(out, []byte(md.String()), 0o644); err != nil {
		return &exitError{exitHarness, err}
	}
	if err := debate.WriteResult(debate.JSONPath(out), res); err != nil {
		return &exitError{exitHarness, err}
	}
	if suite != nil {
		for _, path := range []string{junitFile, debate.JUnitPath(out)} {
			if err := junit.WriteFile(path, *suite); err != nil {
				return &exitError{exitHarness, err}
			}
		}
	}
	return nil
}

// debateExit is the exit status of finished rows: 2 if the harness failed in a run, 1 if a
// deterministic scenario's verdict differs from its file's expect block, or a scenario that
// states a rate showed its outcome at a rate its file does not allow.
func debateExit(w io.Writer, rows []debate.Row) error {
	var bad []string
	for _, r := range rows {
		if r.Errors > 0 {
			return &exitError{exitHarness, fmt.Errorf("the harness failed in %s", r.Scenario)}
		}
		if !r.Random && !r.Passed() {
			bad = append(bad, r.Scenario)
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(w, "verdicts that differ from their scenario's expect block or stated rate: %s\n", strings.Join(bad, ", "))
		return &exitError{exitMismatch, nil}
	}
	return nil
}
