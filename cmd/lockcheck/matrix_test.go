package main

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/matrix"
)

// A cell that got worse than its baseline fails the JUnit case and the exit status, as a cell
// that fails --require does; without regressions the same grid passes.
func TestRegressionsFailTheGate(t *testing.T) {
	cell := matrix.CellOf("getset", "none", matrix.Outcome{Status: matrix.Unsafe})
	m := &matrix.Matrix{Cells: []matrix.Cell{cell}, Baseline: "against r1"}
	if err := matrixExit(io.Discard, m, ""); err != nil {
		t.Fatalf("no regression: %v", err)
	}
	m.Regressions = []matrix.Regression{{Lock: "getset", Fault: "none", Baseline: "getset", How: []string{"unsafe, not safe"}}}
	var ee *exitError
	if err := matrixExit(io.Discard, m, ""); !errors.As(err, &ee) || ee.code != exitMismatch {
		t.Errorf("a regression: %v, want exit %d", err, exitMismatch)
	}
	s := matrixSuite(m, "")
	if len(s.Cases) != 1 || s.Cases[0].Failure == "" || s.Cases[0].Detail != "unsafe, not safe" {
		t.Errorf("JUnit case %+v, want a failure saying how the cell got worse", s.Cases)
	}
}

// --parallel takes a number of runs or auto, whose cap is a number of runs a core; anything else
// is refused with the valid choices.
func TestParallelFlag(t *testing.T) {
	var o matrix.Options
	p := parallelFlag{&o}
	if err := p.Set("auto"); err != nil || !o.Auto || o.Parallel != autoPerCore*runtime.NumCPU() || p.String() != "auto" {
		t.Errorf("auto: %v, options %+v", err, o)
	}
	if err := p.Set("3"); err != nil || o.Auto || o.Parallel != 3 || p.String() != "3" {
		t.Errorf("3: %v, options %+v", err, o)
	}
	for _, bad := range []string{"0", "-1", "many"} {
		if err := p.Set(bad); err == nil || !strings.Contains(err.Error(), "or auto") {
			t.Errorf("%q: %v, want an error naming the choices", bad, err)
		}
	}
}

// The help's legend is checker's: every outcome, best first, with its meaning, and a pointer to
// the docs rather than a copy of them.
func TestMatrixHelpGivesEveryOutcomeInOrder(t *testing.T) {
	help := runCommand(t, "matrix", "--help")
	at := 0
	for _, o := range checker.BestFirst() {
		i := strings.Index(help[at:], "  "+string(o)+" ")
		if i < 0 {
			t.Fatalf("no line for %s after %q in:\n%s", o, help[:at], help)
		}
		at += i
		if !strings.Contains(strings.Join(strings.Fields(help), " "), checker.Meaning(o)) {
			t.Errorf("%s: its meaning is not in the help", o)
		}
	}
	if !strings.Contains(help, "docs/VERDICTS.md") || !strings.Contains(help, "docs/MATRIX.md") {
		t.Errorf("the help does not point to the docs:\n%s", help)
	}
}
