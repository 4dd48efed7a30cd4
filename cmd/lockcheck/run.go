package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/junit"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
)

func newRunCommand() *cobra.Command {
	var resultsDir string
	var count int
	var junitFile, provider, endpoints string
	var duration time.Duration
	var keepData bool
	cmd := &cobra.Command{
		Use:   "run SCENARIO",
		Short: "Run a scenario against real servers and judge it (exit 0: verdict as expected, 1: not, 2: harness error)",
		Long: `Run a scenario end to end: start the servers, the clients and the nemesis, record the
history, judge it, and compare the verdict with the scenario's expect block. The run folder
keeps the history, verdict.json, the scenario and logs; the lock servers' data folders (a
database's files) only when the run failed, or with --keep-data.

SCENARIO is a file, or a name (k2-set-nx-px, debate/k2-set-nx-px) looked up first in the
current folder's scenarios/ (and one folder down), then among the scenarios built into
lockcheck (lockcheck scenarios lists them).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := scenarios.Resolve(args[0])
			if err != nil {
				return &exitError{exitHarness, err}
			}
			sc, err := scenarios.Load(path)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if err := runner.CheckMachine(); err != nil {
				return &exitError{exitHarness, err}
			}
			if duration < 0 {
				return &exitError{exitHarness, fmt.Errorf("--duration %s: must not be negative", duration)}
			}
			opts := runner.Options{ResultsDir: resultsDir, Logger: logger(cmd), Provider: provider, ProviderConfig: endpoints, Duration: duration,
				KeepData: keepData}
			total := sc.Duration.D()
			if duration > 0 {
				total = duration
			}
			out := cmd.OutOrStdout()
			describe(out, sc, total)
			matched, shown := 0, 0
			suite := junit.Suite{Name: "lockcheck run"}
			defer func() {
				if junitFile != "" {
					if err := junit.WriteFile(junitFile, suite); err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), "lockcheck:", err)
					}
				}
			}()
			for i := 1; i <= count; i++ {
				started := time.Now()
				progress := newProgress(total)
				opts.OnEvent = progress.Event
				progress.Start()
				res, err := runner.Run(cmd.Context(), sc, opts)
				progress.Stop()
				if res != nil && res.ReportError != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "lockcheck: no report.html:", res.ReportError)
				}
				suite.Cases = append(suite.Cases, runCase(sc.Name, i, count, time.Since(started), res, err))
				if res != nil && res.Dir != "" && (err == nil || errors.Is(err, runner.ErrInterrupted)) {
					if count == 1 {
						checker.Table(res.Verdict, out)
					}
					report(out, res, i, count)
				}
				if err != nil {
					return &exitError{exitHarness, err}
				}
				if res.Matches {
					matched++
				}
				if res.Shows != nil && *res.Shows {
					shown++
				}
			}
			if count > 1 {
				fmt.Fprintf(out, "%d of %d runs matched the expected verdict\n", matched, count)
			}
			rateOK := true
			if st := sc.Sometimes; st != nil {
				rateOK = st.Consistent(shown, count)
				word := "consistent with"
				if !rateOK {
					word = "NOT consistent with"
				}
				fmt.Fprintf(out, "%d of %d runs showed %s: %s its stated rate %s\n", shown, count, st.What, word, st.Describe())
			}
			if matched < count || !rateOK {
				return &exitError{exitMismatch, nil}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&resultsDir, "results", "results", "folder for run folders")
	cmd.Flags().IntVar(&count, "count", 1, "run the scenario this many times (for repeatability figures)")
	cmd.Flags().StringVar(&junitFile, "junit", "", "also write JUnit XML here: one test case per run, failed when the verdict does not match expect")
	addProviderFlag(cmd, &provider, &endpoints)
	cmd.Flags().BoolVar(&keepData, "keep-data", false, "keep the lock servers' data folders in the run folder of a run that passed "+
		"(a failed run keeps them anyway)")
	cmd.Flags().DurationVar(&duration, "duration", 0, "run this long instead of the scenario's duration (a soak: --duration 30m); the history "+
		"is written as it happens, so Ctrl-C still leaves a checkable run")
	return cmd
}

// runCase is one run as a JUnit test case.
func runCase(scenario string, i, count int, took time.Duration, res *runner.Result, err error) junit.Case {
	c := junit.Case{Name: scenario, ClassName: "lockcheck.run", Time: took}
	if count > 1 {
		c.Name = fmt.Sprintf("%s #%d", scenario, i)
	}
	if res != nil && res.Dir != "" {
		c.Output = res.Verdict.Summary + "\nrun folder: " + res.Dir
	}
	switch {
	case err != nil:
		c.Error = err.Error()
	case !res.Matches:
		c.Failure = "verdict does not match expect"
		var b strings.Builder
		for _, m := range res.Mismatches {
			fmt.Fprintf(&b, "%s: expected %s, got %s\n", m.Field, m.Want, m.Got)
		}
		c.Detail = b.String() + res.Verdict.Summary
	}
	return c
}

func newCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check RUN_FOLDER",
		Short: "Re-judge a stored run from its history alone (exit codes as for run)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := runner.Judge(args[0])
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if res.ReportError != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "lockcheck: no report.html:", res.ReportError)
			}
			out := cmd.OutOrStdout()
			checker.Table(res.Verdict, out)
			report(out, res, 1, 1)
			if !res.Matches {
				return &exitError{exitMismatch, nil}
			}
			return nil
		},
	}
}

func describe(w io.Writer, sc *scenarios.Scenario, d time.Duration) {
	claims := ""
	if len(sc.Claims) > 0 {
		claims = " (" + strings.Join(sc.Claims, ", ") + ")"
	}
	fmt.Fprintf(w, "scenario %s%s: lock %s, %d node(s), %d client(s), ttl %s, %s\n",
		sc.Name, claims, sc.LockDescription(), sc.Nodes, sc.Clients, sc.TTL.D(), d)
}

func report(w io.Writer, res *runner.Result, i, count int) {
	prefix := ""
	if count > 1 {
		prefix = fmt.Sprintf("run %d/%d: ", i, count)
	}
	fmt.Fprintf(w, "%soutcome: %s\n", prefix, res.Verdict.Headline)
	if why := res.Verdict.Unexercised; why != "" {
		fmt.Fprintf(w, "%sthe fault was NOT exercised, so the outcome says nothing about it: %s\n", prefix, why)
	}
	switch {
	case res.Matches && res.Scenario == "":
		fmt.Fprintf(w, "%sno scenario.yaml in the folder, so no expectations: %s\n", prefix, res.Verdict.Summary)
	case res.Matches:
		fmt.Fprintf(w, "%sverdict matches expect: %s\n", prefix, res.Verdict.Summary)
	default:
		fmt.Fprintf(w, "%sverdict DOES NOT match expect: %s\n", prefix, res.Verdict.Summary)
		for _, m := range res.Mismatches {
			fmt.Fprintf(w, "  %s: expected %s, got %s\n", m.Field, m.Want, m.Got)
		}
	}
	if res.Verdict.Server != "" {
		fmt.Fprintf(w, "%sservers ran %s\n", prefix, res.Verdict.Server)
	}
	fmt.Fprintf(w, "%srun folder: %s\n", prefix, res.Dir)
}

func logger(cmd *cobra.Command) *slog.Logger {
	level := slog.LevelWarn
	if v, _ := cmd.Flags().GetBool("verbose"); v {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
