// Command lockmutants measures what the matrix catches: it runs the matrix's columns on each
// mutant design (a shipped design with one realistic bug, locks/mutants.go) and on its original,
// and prints, per mutant, the columns whose cell is worse for the mutant (matrix.Worse). Exit 1 if
// a mutant is caught by no column, 2 if the harness failed. The mutants exist only in a binary
// built with the "mutants" tag (make mutants), so they never appear in lockcheck itself; built
// without it, the tool says so. The binary is its own worker.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/matrix"
	_ "github.com/lockcheck/lockcheck/providers/all" // where servers may run
	"github.com/lockcheck/lockcheck/runner"
	_ "github.com/lockcheck/lockcheck/services/all" // the service kinds
	"github.com/lockcheck/lockcheck/workloads"
)

func main() {
	all := locks.Mutants() // registered first: the worker builds them by name too
	workloads.RunIfWorkerCommand()
	var faults, only, results, out string
	var count int
	var debateDir, from string
	flag.StringVar(&faults, "faults", "", "columns, comma-separated (default: every matrix column)")
	flag.StringVar(&only, "mutants", "", "mutants, comma-separated (default: all)")
	flag.IntVar(&count, "count", 1, "runs per cell")
	flag.StringVar(&results, "results", "results", "folder for the run folders")
	flag.StringVar(&out, "out", "results/MUTANTS.md", "the report (and its JSON beside it, .json)")
	flag.StringVar(&debateDir, "debate", "scenarios/debate", "also run the debate scenarios of each mutant's original against the mutant (\"\": do not)")
	flag.StringVar(&from, "from", "", "judge a matrix folder an earlier run wrote (its matrix.json) instead of running one")
	flag.Parse()
	picked, err := pick(all, only)
	if err == nil {
		err = runner.CheckMachine()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockmutants:", err)
		os.Exit(2)
	}
	started := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := matrix.Options{Locks: rows(picked), Count: count, Runner: runner.Options{ResultsDir: results,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	if faults != "" {
		o.Faults = strings.Split(faults, ",")
	}
	var m *matrix.Matrix
	if from != "" {
		part, err := matrix.ReadFolder(from)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockmutants:", err)
			os.Exit(2)
		}
		m = part.M
	} else {
		o.OnCell = func(done, total int, c matrix.Cell) { fmt.Printf("[%d/%d] %s\n", done, total, matrix.Describe(c)) }
		if m, err = matrix.Run(ctx, o); err != nil {
			fmt.Fprintln(os.Stderr, "lockmutants:", err)
			os.Exit(2)
		}
		// The grid itself, so that the report can be judged again (--from) and every cell's run
		// folder looked at; under results/mutants/, so that results/matrix/latest stays the last
		// lockcheck matrix.
		dir, err := matrix.WriteFolder(filepath.Join(results, "mutants"), m)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockmutants:", err)
			os.Exit(2)
		}
		fmt.Printf("matrix folder: %s\n", dir)
		if m.Interrupted {
			fmt.Fprintln(os.Stderr, "lockmutants: interrupted")
			os.Exit(2)
		}
	}
	r := judge(m, picked)
	if debateDir != "" {
		caught, err := debateCatches(ctx, picked, debateDir, o.Runner, func(line string) { fmt.Println("[debate]", line) })
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockmutants: debate scenarios:", err)
			os.Exit(2)
		}
		for i := range r.Mutants {
			r.Mutants[i].DebateCaught = caught[r.Mutants[i].Name]
		}
	}
	if from == "" {
		r.Wall = time.Since(started) // the grid and the debate scenarios
	}
	fmt.Println()
	r.markdown(os.Stdout)
	if err := r.write(out); err != nil {
		fmt.Fprintln(os.Stderr, "lockmutants:", err)
		os.Exit(2)
	}
	fmt.Printf("\nreport: %s\n", out)
	if r.Errors > 0 {
		os.Exit(2)
	}
	if r.Caught < len(r.Mutants) {
		os.Exit(1)
	}
}

// pick selects the named mutants, or all; an unknown name is refused with the valid ones.
func pick(all []locks.Mutant, only string) ([]locks.Mutant, error) {
	if len(all) == 0 {
		return nil, errors.New(`built without the mutants: build it with the "mutants" tag (make mutants does)`)
	}
	if only == "" {
		return all, nil
	}
	var out []locks.Mutant
	var names []string
	for _, m := range all {
		names = append(names, m.Design.Name)
	}
	for _, n := range strings.Split(only, ",") {
		i := slices.Index(names, n)
		if i < 0 {
			return nil, fmt.Errorf("--mutants: unknown mutant %q; valid mutants: %s", n, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// rows are the matrix's rows: each original once, then the mutants.
func rows(ms []locks.Mutant) []string {
	var out []string
	for _, m := range ms {
		if !slices.Contains(out, m.Original) {
			out = append(out, m.Original)
		}
	}
	for _, m := range ms {
		out = append(out, m.Design.Name)
	}
	return out
}

// Catch is one column that caught a mutant.
type Catch struct {
	Fault string `json:"fault"`
	How   string `json:"how"`
}

// MutantResult is one mutant's line of the report.
type MutantResult struct {
	Name     string  `json:"name"`
	Original string  `json:"original"`
	Bug      string  `json:"bug"`
	CaughtBy []Catch `json:"caught_by"` // matrix columns
	// DebateCaught: debate scenarios of the original whose run with the mutant was worse.
	DebateCaught []Catch  `json:"debate_caught_by,omitempty"`
	Errors       []string `json:"errors,omitempty"` // cells where the harness failed
}

// Report is what make mutants prints and keeps (results/MUTANTS.json feeds make bench).
type Report struct {
	When    time.Time      `json:"when"`
	Faults  []string       `json:"faults"`
	Mutants []MutantResult `json:"mutants"`
	Caught  int            `json:"caught"`
	Errors  int            `json:"errors"`
	Wall    time.Duration  `json:"wall_ns"`
}

func judge(m *matrix.Matrix, ms []locks.Mutant) Report {
	r := Report{When: m.Started, Faults: m.Faults, Wall: m.Wall}
	for _, mu := range ms {
		res := MutantResult{Name: mu.Design.Name, Original: mu.Original, Bug: mu.Bug}
		for _, f := range m.Faults {
			mc, ok1 := m.Cell(mu.Design.Name, f)
			oc, ok2 := m.Cell(mu.Original, f)
			if !ok1 || !ok2 {
				continue
			}
			if mc.Status == matrix.Error || oc.Status == matrix.Error {
				res.Errors = append(res.Errors, f)
				continue
			}
			if how, worse := matrix.Worse(mc, oc); worse {
				res.CaughtBy = append(res.CaughtBy, Catch{Fault: f, How: how})
			}
		}
		if len(res.CaughtBy) > 0 {
			r.Caught++
		}
		if len(res.Errors) > 0 {
			r.Errors++
		}
		r.Mutants = append(r.Mutants, res)
	}
	return r
}

func (r Report) markdown(w io.Writer) {
	fmt.Fprintf(w, "# Mutants caught by the matrix\n\n%d of %d mutants caught (columns: %s; %s).\n\n",
		r.Caught, len(r.Mutants), strings.Join(r.Faults, ", "), r.Wall.Round(time.Second))
	fmt.Fprintln(w, "| mutant | original | bug | caught by (matrix columns) | debate scenarios of the original that catch it |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, m := range r.Mutants {
		var by []string
		for _, c := range m.CaughtBy {
			by = append(by, fmt.Sprintf("`%s` (%s)", c.Fault, c.How))
		}
		if len(by) == 0 {
			by = []string{"**no column**"}
		}
		if len(m.Errors) > 0 {
			by = append(by, "harness error in "+strings.Join(m.Errors, ", "))
		}
		var deb []string
		for _, c := range m.DebateCaught {
			deb = append(deb, fmt.Sprintf("`%s` (%s)", c.Fault, c.How))
		}
		if len(deb) == 0 {
			deb = []string{"none (or not run)"}
		}
		fmt.Fprintf(w, "| `%s` | `%s` | %s | %s | %s |\n", m.Name, m.Original, m.Bug, strings.Join(by, "; "), strings.Join(deb, "; "))
	}
}

func (r Report) write(out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	r.markdown(f)
	err = f.Close()
	js, jerr := json.MarshalIndent(r, "", "  ")
	return errors.Join(err, jerr, os.WriteFile(strings.TrimSuffix(out, filepath.Ext(out))+".json", js, 0o644))
}
