package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/admission"
	"github.com/lockcheck/lockcheck/internal/shard"
	"github.com/lockcheck/lockcheck/junit"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/workloads"
)

func newMatrixCommand() *cobra.Command {
	var o matrix.Options
	var resultsDir, junitFile, require, provider, endpoints, shardFlag, baseline, baselineLock, rates, record string
	var baselineLimits bool
	cmd := &cobra.Command{
		Use: "matrix",
		Short: "Run a grid of locks × faults and tabulate each cell's outcome, " + strings.Join(outcomeWords(), " / ") +
			" (exit 1: a cell fails --require or --baseline)",
		Long: autoHelp(`Run every lock design under every generic fault (flags narrow the grid), one ordinary
scenario run per cell, and write the grid as Markdown, JSON and HTML into
RESULTS/matrix/<time>/ (RESULTS/matrix/latest points at the newest). Each cell says, best first:
`) + outcomeLegend() + autoHelp(`and outside that order n/a (the fault does not apply) and error (the harness failed).
A rescued cell names the fencing registers that kept the data; "outlived" marks double ownership
a holder outliving its promise (K2), "explained" one a fault on the servers explains, "no token"
a design without fencing.

--parallel auto (the default) starts a run while the cores are less than AUTO_BUSY busy, up to
AUTO_PER_CORE a core. --require S fails (exit 1) unless every cell is S or better; --baseline
PREVIOUS and --baseline-lock LOCK fail the cells that got worse than an earlier matrix or another
row; --shard K/N runs part K of N for lockcheck merge. Exit 2: the harness failed in some cell.
How each works, and the outcomes in full: docs/MATRIX.md and docs/VERDICTS.md (Outcomes).
Faults: `) + strings.Join(matrix.FaultNames(), ", ") + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			gate, err := parseRequire(require)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if err := o.Validate(); err != nil {
				return &exitError{exitHarness, err}
			}
			if o.Shard, err = shard.Parse(shardFlag); err != nil {
				return &exitError{exitHarness, fmt.Errorf("--shard: %w", err)}
			}
			var base *matrix.Matrix
			switch {
			case baseline != "" && baselineLock != "":
				return &exitError{
					exitHarness,
					fmt.Errorf("--baseline and --baseline-lock: give one (a matrix of an earlier run, or a row of this one)"),
				}
			case baseline != "":
				var again, recorded int
				if base, again, recorded, err = matrix.ReadBaseline(baseline); err != nil {
					return &exitError{exitHarness, fmt.Errorf("--baseline: %w", err)}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "baseline %s: %d cell(s), %d run(s) judged again by this checker, %d as recorded\n",
					baseline, len(base.Cells), again, recorded)
			case baselineLock != "":
				bd, err := locks.Get(baselineLock)
				if err != nil {
					return &exitError{exitHarness, fmt.Errorf("--baseline-lock: %w", err)}
				}
				// Rows are named by their designs (a design file at a version, mine.yaml@v1.2.0, is
				// the row mine@v1.2.0).
				isBase := func(l string) bool { d, err := locks.Get(l); return err == nil && d.Name == bd.Name }
				if len(o.Locks) > 0 && !slices.ContainsFunc(o.Locks, isBase) {
					o.Locks = append([]string{baselineLock}, o.Locks...)
				}
				baselineLock = bd.Name
			}
			if err := runner.CheckMachine(); err != nil {
				return &exitError{exitHarness, err}
			}
			out := cmd.OutOrStdout()
			o.Runner = runner.Options{ResultsDir: resultsDir, Logger: logger(cmd), Provider: provider, ProviderConfig: endpoints}
			o.OnCell = func(done, total int, c matrix.Cell) {
				fmt.Fprintf(out, "[%d/%d] %s\n", done, total, matrix.Describe(c))
			}
			rec := matrix.Recorded()
			if rates != "" {
				if rec, err = readRates(rates); err != nil {
					return &exitError{exitHarness, fmt.Errorf("--rates: %w", err)}
				}
			}
			m, err := matrix.Run(cmd.Context(), o)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			rec.Attach(m)
			for _, u := range matrix.Unrecorded(m) {
				fmt.Fprintf(out, "%s × %s read %s, which its record never saw (%d run(s): %s); re-measure it: lockcheck matrix "+
					"--locks %s --faults %s --count 5 --record FILE\n", u.Cell.Lock, u.Cell.Fault, u.Status, u.Cell.Recorded.Runs,
					u.Cell.Recorded.Rates(), u.Cell.Lock, u.Cell.Fault)
			}
			if record != "" {
				if err := addRecord(out, record, m, o); err != nil {
					return &exitError{exitHarness, fmt.Errorf("--record: %w", err)}
				}
			}
			switch {
			case base != nil:
				m.Baseline, m.Regressions = "against "+baseline, matrix.Compare(m, base)
			case baselineLock != "":
				m.Baseline, m.Regressions = "against the row of "+baselineLock, matrix.CompareLocks(m, baselineLock)
			}
			var notes []matrix.Regression
			m.Regressions, notes = matrix.SetLimitsAside(m, m.Regressions, baselineLimits)
			for _, n := range notes {
				fmt.Fprintf(out, "%s × %s: the limit of every lease shows more often than in %s's cell (%s): every window a holder "+
					"outliving its promise, a lease of another length, not a bug of its own (--baseline-limits gates it)\n",
					n.Lock, n.Fault, n.Baseline, strings.Join(n.How, "; "))
			}
			return finishMatrix(out, resultsDir, junitFile, m, gate)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Locks, "locks", nil, "rows: lock designs (default: all; see lockcheck list)")
	f.StringSliceVar(&o.Faults, "faults", nil, "columns: faults (default: all)")
	f.IntVar(&o.Count, "count", 1, "runs per cell; a cell shows its worst status and how many runs reached it")
	f.Int64Var(&o.Seed, "seed", 1, "seed of every cell's scenario")
	_ = parallelFlag{&o}.Set(defaultMatrixParallel)
	f.Var(parallelFlag{&o}, "parallel",
		autoHelp("runs side by side (each has its own servers, ports and run folder): N, or auto (start a run while the cores are less than AUTO_BUSY busy, up to AUTO_PER_CORE a core); 1 runs one cell after another"))
	f.StringVar(&resultsDir, "results", "results", "folder for run folders and the matrix folder")
	f.BoolVar(&o.Warm, "warm", true, "keep the lock service of a cell no fault touches running for the next cell of the same layout "+
		"(its servers' logs go to RESULTS/"+matrix.KeptServersDir+"/); --warm=false starts every cell's servers afresh")
	f.StringVar(&junitFile, "junit", "", "also write JUnit XML here: one test case per cell")
	f.StringVar(&require, "require", "", "gate: every cell must have this status or a better one: "+checker.OutcomeNames()+" (exit 1 otherwise)")
	addProviderFlag(cmd, &provider, &endpoints)
	f.StringVar(&shardFlag, "shard", "", "run only part K of N of the grid (e.g. 2/3), for a CI job matrix; lockcheck merge combines the parts")
	f.StringVar(
		&baseline,
		"baseline",
		"",
		"gate: exit 1 if a cell got worse than in this earlier matrix (matrix.json, matrix folder or results folder)",
	)
	f.StringVar(&baselineLock, "baseline-lock", "", "gate: exit 1 if a cell of another row got worse than this lock's cell under the same fault")
	f.BoolVar(&baselineLimits, "baseline-limits", false, "with --baseline or --baseline-lock: also fail a cell whose every window is a holder outliving "+
		"its promise (K2) for showing it more often than the baseline (by default that is reported, not failed: a lease of another length)")
	f.StringVar(&rates, "rates", "", "judge the cells that vary by the rates in this record (default: the record built into lockcheck, "+
		"measured on its default grid; none: every run must meet the gate)")
	f.StringVar(&record, "record", "", "add this run's statuses, cell by cell, to this record (made if missing), and list the cells whose runs differed")
	return cmd
}

// readRates reads a --rates record: a file, or "none" for an empty one.
func readRates(path string) (*matrix.Record, error) {
	if path == "none" {
		return &matrix.Record{Cells: map[string]*matrix.RecordedCell{}}, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return matrix.ReadRecord(path)
}

// addRecord counts m's runs into the record at path and says which cells varied.
func addRecord(out io.Writer, path string, m *matrix.Matrix, o matrix.Options) error {
	rec, err := matrix.ReadRecord(path)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	// The machine kind and the build: a cell's rate is the rate of one processor and one build.
	rec.Add(m, fmt.Sprintf("%s: %d run(s) a cell, --parallel %s, %d cores (%s, %s), build %s, took %s", m.Started.Format("2006-01-02 15:04"),
		o.Count, parallelSaid(m), runtime.NumCPU(), host, processorName(), cmp.Or(workloads.Build, "not built by make"), m.Wall.Round(time.Second)))
	if err := rec.Write(path); err != nil {
		return err
	}
	varied := 0
	for _, rc := range rec.Cells {
		if rc.Varies() {
			varied++
		}
	}
	fmt.Fprintf(out, "record %s: %d cell(s), %d of them varied over the runs recorded\n", path, len(rec.Cells), varied)
	for _, c := range matrix.Differed(m) {
		fmt.Fprintf(out, "  this run: %s × %s varied: %s\n", c.Lock, c.Fault, c.Label())
	}
	return nil
}

// defaultMatrixParallel is --parallel's default, chosen by measurement on 2 cores (docs/MATRIX.md).
const defaultMatrixParallel = "auto"

// parallelFlag is --parallel: a number of runs side by side, or auto, which admits runs while
// the machine has CPU to spare, up to autoPerCore a core.
type parallelFlag struct{ o *matrix.Options }

const autoPerCore = 6

// autoHelp fills in auto's settings where a help text names them.
// outcomeWords are the outcome words best first, from checker.Outcomes.
func outcomeWords() []string {
	var out []string
	for _, o := range checker.BestFirst() {
		out = append(out, string(o))
	}
	return out
}

// outcomeLegend is one line an outcome, best first, from checker's words (checker.Meaning), so
// the help cannot drift from the order or the docs.
func outcomeLegend() string {
	var b strings.Builder
	for _, o := range checker.BestFirst() {
		line := fmt.Sprintf("  %-13s", o)
		for _, w := range strings.Fields(checker.Meaning(o) + ";") {
			if len(line)+1+len(w) > 100 { // as wide as the rest of the help
				b.WriteString(line + "\n")
				line = strings.Repeat(" ", 15)
			} else {
				line += " "
			}
			line += w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func autoHelp(s string) string {
	return strings.NewReplacer("AUTO_BUSY", fmt.Sprintf("%.0f%%", 100*admission.DefaultBusy),
		"AUTO_PER_CORE", strconv.Itoa(autoPerCore)).Replace(s)
}

func (p parallelFlag) String() string {
	if p.o == nil {
		return ""
	}
	if p.o.Auto {
		return "auto"
	}
	return strconv.Itoa(p.o.Parallel)
}

func (p parallelFlag) Set(v string) error {
	if v == "auto" {
		p.o.Auto, p.o.Parallel = true, autoPerCore*runtime.NumCPU()
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("%q: want a number of runs (1 or more) or auto", v)
	}
	p.o.Auto, p.o.Parallel = false, n
	return nil
}

func (parallelFlag) Type() string { return "N|auto" }

// parallelSaid is how a record names the setting a grid ran at: auto with the most runs it had
// side by side.
func parallelSaid(m *matrix.Matrix) string {
	if m.Auto {
		return fmt.Sprintf("auto (up to %d side by side)", m.Peak)
	}
	return strconv.Itoa(m.Parallel)
}

func parseRequire(require string) (matrix.Status, error) { return matrix.ParseRequire(require) }

// finishMatrix writes a finished (or merged) matrix's folder, prints it, writes JUnit, and turns
// it into the exit status: 2 if interrupted or the harness failed in a cell, 1 if a cell fails
// the gate.
func finishMatrix(out io.Writer, resultsDir, junitFile string, m *matrix.Matrix, gate matrix.Status) error {
	dir, err := matrix.WriteFolder(resultsDir, m)
	if err != nil {
		return &exitError{exitHarness, err}
	}
	fmt.Fprintln(out)
	m.Markdown(out, dir)
	fmt.Fprintf(out, "\nmatrix folder: %s\n", dir)
	if junitFile != "" {
		suite := matrixSuite(m, gate)
		if err := junit.WriteFile(junitFile, suite); err != nil {
			return &exitError{exitHarness, err}
		}
		// A copy in the folder, where lockcheck merge looks for each shard's.
		if err := junit.WriteFile(filepath.Join(dir, matrix.JUnitFile), suite); err != nil {
			return &exitError{exitHarness, err}
		}
	}
	return matrixExit(out, m, gate)
}

func matrixExit(out io.Writer, m *matrix.Matrix, gate matrix.Status) error {
	if m.Interrupted {
		return &exitError{exitHarness, runner.ErrInterrupted}
	}
	for _, c := range m.Cells {
		if c.Status == matrix.Error {
			return &exitError{exitHarness, fmt.Errorf("the harness failed in %s × %s: %s", c.Lock, c.Fault, c.Detail)}
		}
	}
	bad := m.Gate(gate)
	if len(bad) > 0 {
		fmt.Fprintf(out, "%d cell(s) fail --require %s\n", len(bad), gate)
	}
	if len(m.Regressions) > 0 {
		fmt.Fprintf(out, "%d cell(s) got worse than the baseline (%s)\n", len(m.Regressions), m.Baseline)
	}
	if len(bad) > 0 || len(m.Regressions) > 0 {
		return &exitError{exitMismatch, nil}
	}
	return nil
}

// matrixSuite is the grid as JUnit test cases; without a gate no cell fails.
func matrixSuite(m *matrix.Matrix, gate matrix.Status) junit.Suite {
	s := junit.Suite{Name: "lockcheck matrix"}
	for _, c := range m.Cells {
		jc := junit.Case{Name: c.Lock + " × " + c.Fault, ClassName: "lockcheck.matrix." + c.Lock, Time: c.Wall,
			Output: c.Label() + ": " + c.Detail}
		if len(c.Outcomes) > 0 && c.Outcomes[0].Dir != "" {
			jc.Output += "\nrun folder: " + c.Outcomes[0].Dir
		}
		var worse []string
		for _, r := range m.Regressions {
			if r.Lock == c.Lock && r.Fault == c.Fault {
				worse = r.How
			}
		}
		switch {
		case c.Status == matrix.Error:
			jc.Error, jc.Detail = "harness error", c.Detail
		case !c.Meets(gate):
			jc.Failure, jc.Detail = fmt.Sprintf("%s, required %s", c.Label(), gate), c.Detail
		case len(worse) > 0:
			jc.Failure, jc.Detail = "worse than the baseline ("+m.Baseline+")", strings.Join(worse, "; ")
		}
		s.Cases = append(s.Cases, jc)
	}
	return s
}

// processorName is the machine's processor as /proc/cpuinfo names it ("AMD EPYC"), or "processor
// unknown".
func processorName() string {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.Lines(string(raw)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "processor unknown"
}
