package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
)

// debateCatches runs each debate scenario whose lock is a mutant's original twice, as it is and
// with the mutant in the original's place (its lock and name changed), and returns, per mutant, the
// scenarios where the mutant's run is worse (matrix.Worse
// on the two runs, classified as matrix cells are).
func debateCatches(ctx context.Context, ms []locks.Mutant, dir string, o runner.Options, progress func(string)) (map[string][]Catch, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string][]Catch{}
	originals := map[string]matrix.Cell{} // file -> the original's run
	for _, f := range files {
		sc, err := scenarios.Load(f)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		for _, m := range ms {
			if sc.LockSpec.Name != m.Original {
				continue
			}
			orig, ok := originals[f]
			if !ok {
				orig = runOnce(ctx, sc, m.Original, name, o)
				originals[f] = orig
				progress(matrix.Describe(orig))
			}
			msc, err := withMutant(sc, name, m)
			if err != nil {
				return nil, fmt.Errorf("%s with %s: %w", f, m.Design.Name, err)
			}
			mc := runOnce(ctx, msc, m.Design.Name, name, o)
			progress(matrix.Describe(mc))
			if ctx.Err() != nil {
				return out, runner.ErrInterrupted
			}
			if how, worse := matrix.Worse(mc, orig); worse {
				out[m.Design.Name] = append(out[m.Design.Name], Catch{Fault: "debate/" + name, How: how})
			}
		}
	}
	return out, nil
}

// withMutant is a debate scenario (named name) with the mutant in its original's place.
func withMutant(sc *scenarios.Scenario, name string, m locks.Mutant) (*scenarios.Scenario, error) {
	c := *sc
	c.Name, c.LockSpec = name+"--"+m.Design.Name, scenarios.LockSpec{Name: m.Design.Name}
	c.Comment = fmt.Sprintf("%s with the mutant %s in place of %s (lockmutants)", sc.Path, m.Design.Name, m.Original)
	return scenarios.New(c)
}

// runOnce runs a scenario and classifies it as a one-run matrix cell named after the scenario.
func runOnce(ctx context.Context, sc *scenarios.Scenario, lock, name string, o runner.Options) matrix.Cell {
	res, err := runner.Run(ctx, sc, o)
	var out matrix.Outcome
	switch {
	case err != nil && !errors.Is(err, runner.ErrInterrupted):
		out = matrix.Outcome{Status: matrix.Error, Err: err.Error()}
	default:
		out = matrix.Classify(res.Verdict, sc.Design().HasToken())
	}
	return matrix.CellOf(lock, "debate/"+name, out)
}
