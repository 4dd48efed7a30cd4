//go:build mutants

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
)

// debateCatches runs each debate scenario whose lock is a mutant's original twice, as it is and
// with the mutant in the original's place (the file's text with its lock: and name: lines
// changed), and returns, per mutant, the scenarios where the mutant's run is worse (matrix.Worse
// on the two runs, classified as matrix cells are).
func debateCatches(ctx context.Context, ms []locks.Mutant, dir string, o runner.Options, progress func(string)) (map[string][]Catch, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string][]Catch{}
	originals := map[string]matrix.Cell{} // file -> the original's run
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		for _, m := range ms {
			lockLine := regexp.MustCompile(`(?m)^lock:\s*` + regexp.QuoteMeta(m.Original) + `\s*(#.*)?$`)
			if !lockLine.Match(src) {
				continue
			}
			orig, ok := originals[f]
			if !ok {
				sc, err := scenarios.Load(f)
				if err != nil {
					return nil, err
				}
				orig = runOnce(ctx, sc, m.Original, name, o)
				originals[f] = orig
				progress(matrix.Describe(orig))
			}
			text := lockLine.ReplaceAll(src, []byte("lock: "+m.Design.Name))
			mname := name + "--" + m.Design.Name
			text = regexp.MustCompile(`(?m)^name:\s*`+regexp.QuoteMeta(name)+`\s*$`).ReplaceAll(text, []byte("name: "+mname))
			sc, err := scenarios.Parse(filepath.Join(dir, mname+".yaml"), text)
			if err != nil {
				return nil, fmt.Errorf("%s with %s: %w", f, m.Design.Name, err)
			}
			mc := runOnce(ctx, sc, m.Design.Name, name, o)
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
