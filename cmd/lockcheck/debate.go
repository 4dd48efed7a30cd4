package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/debate"
	"github.com/lockcheck/lockcheck/junit"
	"github.com/lockcheck/lockcheck/runner"
)

func newDebateCommand() *cobra.Command {
	var o debate.Options
	var resultsDir, out, record, repeatability, junitFile, provider, endpoints string
	cmd := &cobra.Command{
		Use:   "debate",
		Short: "Run the debate scenarios and write DEBATE.md: claim → scenario → observed verdict → side (exit 1: a verdict differs from its file)",
		Long: `Run every scenario in scenarios/debate/ against real servers and write a Markdown report:
for each claim of the Kleppmann/antirez debate, the scenario that tests it, the verdict observed,
whether it matched the scenario's expect block, the side it supports, and the command to
reproduce it. Repeatability figures come from a stored record (--repeatability), made by
running with --count 10 --seeds 20 --record FILE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := debate.Load(o)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if err := runner.CheckMachine(); err != nil {
				return &exitError{exitHarness, err}
			}
			w := cmd.OutOrStdout()
			o.Runner = runner.Options{ResultsDir: resultsDir, Logger: logger(cmd), Provider: provider, ProviderConfig: endpoints}
			suite := junit.Suite{Name: "lockcheck debate"}
			last := time.Now()
			o.OnRun = func(name string, i, n int, res *runner.Result, err error) {
				suite.Cases = append(suite.Cases, runCase(name, i, n, time.Since(last), res, err))
				last = time.Now()
				status := "harness error: " + fmt.Sprint(err)
				if err == nil {
					status = "matches expect"
					if !res.Matches {
						status = "DOES NOT match expect"
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
				rec := debate.Record{Measured: started, Command: command, Machine: debate.Machine(), Wall: wall, Rows: rows}
				if err := debate.WriteRecord(record, rec); err != nil {
					return &exitError{exitHarness, err}
				}
			}
			rec, err := debate.ReadRecord(repeatability)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return &exitError{exitHarness, err}
			}
			f, err := os.Create(out)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			debate.Report{Generated: started, Command: command, Wall: wall, Rows: rows, Record: rec}.Markdown(f)
			if err := f.Close(); err != nil {
				return &exitError{exitHarness, err}
			}
			if junitFile != "" {
				if err := junit.WriteFile(junitFile, suite); err != nil {
					return &exitError{exitHarness, err}
				}
			}
			fmt.Fprintf(w, "\nwrote %s (%s)\n", out, wall.Round(time.Second))
			if runErr != nil {
				return &exitError{exitHarness, runErr}
			}
			var bad []string
			for _, r := range rows {
				if r.Errors > 0 {
					return &exitError{exitHarness, fmt.Errorf("the harness failed in %s", r.Scenario)}
				}
				if r.Matched < r.Runs && !r.Random {
					bad = append(bad, r.Scenario)
				}
			}
			if len(bad) > 0 {
				fmt.Fprintf(w, "verdicts that differ from their scenario's expect block: %s\n", strings.Join(bad, ", "))
				return &exitError{exitMismatch, nil}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "scenarios", "scenarios/debate", "folder of debate scenarios")
	f.StringSliceVar(&o.Only, "only", nil, "run only these scenarios (by name)")
	f.IntVar(&o.Count, "count", 1, "runs of each deterministic scenario")
	f.IntVar(&o.Seeds, "seeds", 1, "seeds (1..N) for each scenario with a random schedule")
	f.StringVar(&resultsDir, "results", "results", "folder for run folders")
	f.StringVar(&out, "out", "results/DEBATE.md", "where to write the report")
	f.StringVar(&record, "record", "", "also store these runs as the repeatability record in this file")
	f.StringVar(&repeatability, "repeatability", "scenarios/debate/repeatability.json", "repeatability record to show")
	f.StringVar(&junitFile, "junit", "", "also write JUnit XML here: one test case per run")
	addProviderFlag(cmd, &provider, &endpoints)
	return cmd
}
