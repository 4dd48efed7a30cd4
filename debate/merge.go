package debate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/internal/shard"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Part is one shard's Result and the file it was read from.
type Part struct {
	File string
	R    Result
}

// FindResults reads every debate Result in dir (its *.json files of that kind). Run folders the
// rows name are looked up where they are relative to the file found, so that a merged report
// points at the runs where the shards' artifacts were unpacked.
func FindResults(dir string) ([]Part, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Part
	for _, f := range files {
		r, err := ReadResult(f)
		if errors.Is(err, ErrNotDebate) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rebaseFolders(&r, f)
		out = append(out, Part{File: f, R: r})
	}
	return out, nil
}

// rebaseFolders points the rows' run folders at the same runs next to the JSON file at path,
// when they are there: the report was written to r.Out and the runs under r.ResultsDir.
func rebaseFolders(r *Result, path string) {
	if r.ResultsDir == "" || r.Out == "" {
		return
	}
	toResults, err := filepath.Rel(filepath.Dir(r.Out), r.ResultsDir)
	if err != nil {
		return
	}
	root := filepath.Join(filepath.Dir(path), toResults)
	for i := range r.Rows {
		row := &r.Rows[i]
		rel, err := filepath.Rel(r.ResultsDir, row.Folder)
		if row.Folder == "" || err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if here := filepath.Join(root, rel); exists(here) {
			row.Folder = here
		}
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// Merge puts the shards of one debate run back together, rows in claim order as a single run
// would have them. It refuses shards of different runs (scenarios, --count, --seeds, number of
// shards), a shard given twice, and rows outside their shard. Missing shards are an error naming
// them, unless allowMissing: then the result lists them and lacks their rows.
func Merge(parts []Part, allowMissing bool) (Result, error) {
	if len(parts) == 0 {
		return Result{}, errors.New("no debate shards to merge")
	}
	for _, p := range parts {
		if p.R.Shard == nil {
			return Result{}, fmt.Errorf("%s: a whole debate run, not a shard (lockcheck debate --shard K/N makes shards)", p.File)
		}
	}
	parts = slices.Clone(parts)
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].R.Shard.K < parts[j].R.Shard.K })
	first := parts[0]
	n := first.R.Shard.N
	have := map[int]string{}
	for _, p := range parts {
		r := p.R
		if r.Shard.N != n {
			return Result{}, fmt.Errorf("%s is shard %s but %s is shard %s: different splits", first.File, first.R.Shard, p.File, r.Shard)
		}
		if diff := runDiff(first.R, r); diff != "" {
			return Result{}, fmt.Errorf("%s and %s are shards of different runs: %s", first.File, p.File, diff)
		}
		if prev, dup := have[r.Shard.K]; dup {
			return Result{}, fmt.Errorf("shard %s given twice: %s and %s", r.Shard, prev, p.File)
		}
		have[r.Shard.K] = p.File
		for _, row := range r.Rows {
			if !r.Shard.Has(ShardKey(row.File)) {
				return Result{}, fmt.Errorf("%s: scenario %s is not in shard %s (made by another version of lockcheck?)", p.File, ShardKey(row.File), r.Shard)
			}
		}
	}
	present := map[int]bool{}
	for k := range have {
		present[k] = true
	}
	missing := shard.Missing(present, n)
	if len(missing) > 0 && !allowMissing {
		return Result{}, fmt.Errorf("debate shard(s) %s missing: a merge needs all %d (--allow-missing merges what is "+
			"there)", strings.Join(missing, ", "), n)
	}

	out := Result{Kind: ResultKind, Command: first.R.Command, Count: first.R.Count, Seeds: first.R.Seeds,
		Scenarios: first.R.Scenarios, Merged: len(parts), MissingShards: missing, Record: first.R.Record}
	for _, p := range parts {
		r := p.R
		if out.Generated.IsZero() || r.Generated.Before(out.Generated) {
			out.Generated = r.Generated
		}
		out.Wall = max(out.Wall, r.Wall) // shards run side by side
		out.Interrupted = out.Interrupted || r.Interrupted
		out.Rows = append(out.Rows, r.Rows...)
	}
	// The order Load gives: by claim, then file name.
	sort.SliceStable(out.Rows, func(i, j int) bool {
		a := &scenarios.Scenario{Claims: out.Rows[i].Claims, Path: out.Rows[i].File}
		b := &scenarios.Scenario{Claims: out.Rows[j].Claims, Path: out.Rows[j].File}
		return claimOrder(a) < claimOrder(b)
	})
	return out, nil
}

// runDiff says how two shards' runs differ, or "" if they are shards of the same run.
func runDiff(a, b Result) string {
	x, y := slices.Clone(a.Scenarios), slices.Clone(b.Scenarios)
	slices.Sort(x)
	slices.Sort(y)
	switch {
	case !slices.Equal(x, y):
		return fmt.Sprintf("scenarios %s vs %s", strings.Join(x, ","), strings.Join(y, ","))
	case a.Count != b.Count:
		return fmt.Sprintf("--count %d vs %d", a.Count, b.Count)
	case a.Seeds != b.Seeds:
		return fmt.Sprintf("--seeds %d vs %d", a.Seeds, b.Seeds)
	}
	return ""
}
