package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/debate"
	"github.com/lockcheck/lockcheck/junit"
	"github.com/lockcheck/lockcheck/matrix"
)

func newMergeCommand() *cobra.Command {
	var resultsDir, out, require string
	var allowMissing bool
	cmd := &cobra.Command{
		Use:   "merge SHARD_FOLDER...",
		Short: "Combine the result folders of sharded matrix / debate runs (--shard K/N) into one matrix and one DEBATE.md",
		Long: `Combine what CI jobs ran with lockcheck matrix --shard K/N or lockcheck debate --shard K/N,
each into its own results folder, into one report, as if one job had run it all.

Each SHARD_FOLDER is a job's results folder (or a matrix folder): merge finds its matrix
(matrix.json in it, in matrix/latest/ or the newest matrix/<time>/) and its debate JSON (*.json
written next to a DEBATE.md). The merged matrix goes to RESULTS/matrix/<time>/ (md, json, html,
and junit.xml when every shard kept one), the merged debate to --out (with its .json, and
.junit.xml when every shard kept one). Cells and rows link to the run folders inside the shard
folders.

merge refuses shards of different grids or runs (locks, faults, scenarios, --count, --seed(s),
N), a shard given twice, and missing shards (it names them; --allow-missing writes what is
there, and still exits 2). Exit codes as for matrix (with --require) and debate: 0, 1 a gate fails, 2 harness error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			gate, err := parseRequire(require)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			w := cmd.OutOrStdout()
			var mparts []matrix.Part
			var dparts []debate.Part
			for _, dir := range args {
				if st, err := os.Stat(dir); err != nil || !st.IsDir() {
					return &exitError{exitHarness, fmt.Errorf("%s: not a folder", dir)}
				}
				mp, merr := matrix.ReadFolder(dir)
				switch {
				case merr == nil:
					mparts = append(mparts, mp)
				case !errors.Is(merr, matrix.ErrNoMatrix):
					return &exitError{exitHarness, merr}
				}
				dp, err := debate.FindResults(dir)
				if err != nil {
					return &exitError{exitHarness, err}
				}
				dparts = append(dparts, dp...)
				if merr != nil && len(dp) == 0 {
					return &exitError{exitHarness, fmt.Errorf("%s: no matrix (matrix.json in it, in matrix/latest/ or matrix/*/) and no debate result (a "+
						"*.json written next to a DEBATE.md)", dir)}
				}
			}
			var errs []error
			if len(mparts) > 0 {
				errs = append(errs, mergeMatrices(w, mparts, resultsDir, gate, allowMissing))
			}
			if len(dparts) > 0 {
				errs = append(errs, mergeDebates(w, dparts, out, allowMissing))
			}
			return worst(errs)
		},
	}
	f := cmd.Flags()
	f.StringVar(&resultsDir, "results", "results", "where the merged matrix folder goes (RESULTS/matrix/<time>/)")
	f.StringVar(&out, "out", "results/DEBATE.md", "where the merged debate report goes")
	f.StringVar(&require, "require", "", "gate on the merged matrix: every cell must have this status or a better "+
		"one: "+checker.OutcomeNames()+" (exit 1 otherwise)")
	f.BoolVar(&allowMissing, "allow-missing", false, "merge even when shards are missing (the report names them)")
	return cmd
}

func mergeMatrices(w io.Writer, parts []matrix.Part, resultsDir string, gate matrix.Status, allowMissing bool) error {
	m, err := matrix.Merge(parts, allowMissing)
	if err != nil {
		return &exitError{exitHarness, err}
	}
	var folders []string
	for _, p := range parts {
		folders = append(folders, p.Folder)
	}
	suite, err := mergedJUnit(w, folders, func(folder string) string { return filepath.Join(folder, matrix.JUnitFile) })
	if err != nil {
		return err
	}
	dir, err := matrix.WriteFolder(resultsDir, m)
	if err != nil {
		return &exitError{exitHarness, err}
	}
	fmt.Fprintln(w)
	m.Markdown(w, dir)
	fmt.Fprintf(w, "\nmerged matrix folder: %s\n", dir)
	if suite != nil {
		if err := junit.WriteFile(filepath.Join(dir, matrix.JUnitFile), *suite); err != nil {
			return &exitError{exitHarness, err}
		}
	}
	if len(m.MissingShards) > 0 {
		return &exitError{exitHarness, fmt.Errorf("matrix shard(s) %s missing", strings.Join(m.MissingShards, ", "))}
	}
	return matrixExit(w, m, gate)
}

func mergeDebates(w io.Writer, parts []debate.Part, out string, allowMissing bool) error {
	res, err := debate.Merge(parts, allowMissing)
	if err != nil {
		return &exitError{exitHarness, err}
	}
	var files []string
	for _, p := range parts {
		files = append(files, p.File)
	}
	suite, err := mergedJUnit(w, files, func(file string) string {
		return strings.TrimSuffix(file, ".json") + ".junit.xml"
	})
	if err != nil {
		return err
	}
	res.Command = "lockcheck " + strings.Join(os.Args[1:], " ")
	res.ResultsDir, res.Out = "", out // the rows' run folders are where the shards' were found
	if err := writeDebate(out, debate.JUnitPath(out), res, suite); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmerged debate report: %s (%d scenario(s) from %d shard(s))\n", out, len(res.Rows), res.Merged)
	if len(res.MissingShards) > 0 {
		return &exitError{exitHarness, fmt.Errorf("debate shard(s) %s missing", strings.Join(res.MissingShards, ", "))}
	}
	if res.Interrupted {
		return &exitError{exitHarness, errors.New("a debate shard was interrupted")}
	}
	return debateExit(w, res.Rows)
}

// mergedJUnit reads each part's JUnit copy (at junitOf(part)) and returns their cases as one
// suite; nil when no part kept one. Some parts with one and some without is said and skipped:
// a report that silently lacks cells would look like a pass.
func mergedJUnit(w io.Writer, parts []string, junitOf func(string) string) (*junit.Suite, error) {
	var found, lacking []string
	for _, p := range parts {
		if _, err := os.Stat(junitOf(p)); err == nil {
			found = append(found, junitOf(p))
		} else {
			lacking = append(lacking, p)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	if len(lacking) > 0 {
		fmt.Fprintf(w, "JUnit not merged: %s kept no JUnit report (run with --junit)\n", strings.Join(lacking, ", "))
		return nil, nil
	}
	var merged junit.Suite
	for _, f := range found {
		s, err := junit.ReadFile(f)
		if err != nil {
			return nil, &exitError{exitHarness, err}
		}
		if merged.Name == "" {
			merged.Name = s.Name
		}
		merged.Cases = append(merged.Cases, s.Cases...)
	}
	return &merged, nil
}

// worst is the error with the highest exit code (harness over mismatch over none).
func worst(errs []error) error {
	var out error
	code := exitMatch
	for _, err := range errs {
		if err == nil {
			continue
		}
		c := exitHarness
		var ee *exitError
		if errors.As(err, &ee) {
			c = ee.code
		}
		if out == nil || c > code {
			out, code = err, c
		}
	}
	return out
}
