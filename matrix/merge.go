package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/shard"
)

// Part is one shard's matrix and the matrix folder it was read from.
type Part struct {
	Folder string
	M      *Matrix
}

// ErrNoMatrix: a folder holds no matrix.json where ReadFolder looks.
var ErrNoMatrix = errors.New("no matrix.json")

// ReadFolder finds the matrix in dir, which is a matrix folder (holding matrix.json) or a results
// folder (its matrix/latest, else its newest matrix/<time>/), as a CI job's artifact holds it.
// Run folders the cells name are looked up under the results folder the shard's were found in,
// so that the merged pages link to the runs where the artifacts were unpacked.
func ReadFolder(dir string) (Part, error) {
	folder := ""
	for _, cand := range []string{dir, filepath.Join(dir, "matrix", "latest")} {
		if _, err := os.Stat(filepath.Join(cand, JSONFile)); err == nil {
			folder = cand
			break
		}
	}
	if folder == "" {
		stamps, _ := filepath.Glob(filepath.Join(dir, "matrix", "*", JSONFile))
		sort.Strings(stamps)
		if len(stamps) == 0 {
			return Part{}, fmt.Errorf("%s: %w (looked in it, in matrix/latest/ and in matrix/*/)", dir, ErrNoMatrix)
		}
		folder = filepath.Dir(stamps[len(stamps)-1])
	}
	path := filepath.Join(folder, JSONFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Part{}, err
	}
	var m Matrix
	if err := json.Unmarshal(b, &m); err != nil {
		return Part{}, fmt.Errorf("%s: %w", path, err)
	}
	rebaseRunFolders(&m, filepath.Dir(filepath.Dir(folder)))
	return Part{Folder: folder, M: &m}, nil
}

// rebaseRunFolders points the cells' run folders, recorded relative to the shard's own results
// folder, at the same runs under root, where they are on this machine (when they are there).
func rebaseRunFolders(m *Matrix, root string) {
	if m.ResultsDir == "" {
		return
	}
	for i := range m.Cells {
		for j := range m.Cells[i].Outcomes {
			o := &m.Cells[i].Outcomes[j]
			rel, err := filepath.Rel(m.ResultsDir, o.Dir)
			if o.Dir == "" || err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			if here := filepath.Join(root, rel); exists(here) {
				o.Dir = here
			}
		}
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// Merge puts the shards of one grid back together, cells row by row as a single run would have
// them. It refuses shards of different grids (locks, faults, runs per cell, seed, number of
// shards), a shard given twice, and cells outside their shard. Missing shards are an error
// naming them, unless allowMissing: then the matrix lists them and lacks their cells.
func Merge(parts []Part, allowMissing bool) (*Matrix, error) {
	if len(parts) == 0 {
		return nil, errors.New("no shards to merge")
	}
	for _, p := range parts {
		if p.M.Shard == nil {
			return nil, fmt.Errorf("%s: a whole grid, not a shard (lockcheck matrix --shard K/N makes shards)", p.Folder)
		}
	}
	parts = slices.Clone(parts)
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].M.Shard.K < parts[j].M.Shard.K })
	first := parts[0]
	n := first.M.Shard.N
	have := map[int]string{}
	for _, p := range parts {
		m := p.M
		if m.Shard.N != n {
			return nil, fmt.Errorf("%s is shard %s but %s is shard %s: different splits", first.Folder, first.M.Shard, p.Folder, m.Shard)
		}
		if diff := gridDiff(first.M, m); diff != "" {
			return nil, fmt.Errorf("%s and %s are shards of different grids: %s", first.Folder, p.Folder, diff)
		}
		if prev, dup := have[m.Shard.K]; dup {
			return nil, fmt.Errorf("shard %s given twice: %s and %s", m.Shard, prev, p.Folder)
		}
		have[m.Shard.K] = p.Folder
		for _, c := range m.Cells {
			if !m.Shard.Has(CellKey(c.Lock, c.Fault)) {
				return nil, fmt.Errorf("%s: cell %s is not in shard %s (made by another version of lockcheck?)", p.Folder, CellKey(c.Lock, c.Fault), m.Shard)
			}
		}
	}
	present := map[int]bool{}
	for k := range have {
		present[k] = true
	}
	missing := shard.Missing(present, n)
	if len(missing) > 0 && !allowMissing {
		return nil, fmt.Errorf("shard(s) %s missing: a merge needs all %d (--allow-missing merges what is there)", strings.Join(missing, ", "), n)
	}

	out := &Matrix{Locks: first.M.Locks, Faults: first.M.Faults, Count: first.M.Count, Seed: first.M.Seed,
		Merged: len(parts), MissingShards: missing}
	cells := map[string]Cell{}
	for _, p := range parts {
		m := p.M
		if out.Started.IsZero() || m.Started.Before(out.Started) {
			out.Started = m.Started
		}
		out.Wall = max(out.Wall, m.Wall) // shards run side by side
		out.Interrupted = out.Interrupted || m.Interrupted
		for _, c := range m.Cells {
			cells[CellKey(c.Lock, c.Fault)] = c
		}
	}
	for _, l := range out.Locks {
		for _, f := range out.Faults {
			if c, ok := cells[CellKey(l, f)]; ok {
				out.Cells = append(out.Cells, c)
			}
		}
	}
	if out.Started.IsZero() {
		out.Started = time.Now()
	}
	return out, nil
}

// gridDiff says how two shards' grids differ, or "" if they are the same grid (the order of the
// names does not matter: it does not change which cells are in which shard).
func gridDiff(a, b *Matrix) string {
	sameSet := func(x, y []string) bool {
		x, y = slices.Clone(x), slices.Clone(y)
		slices.Sort(x)
		slices.Sort(y)
		return slices.Equal(x, y)
	}
	switch {
	case !sameSet(a.Locks, b.Locks):
		return fmt.Sprintf("locks %s vs %s", strings.Join(a.Locks, ","), strings.Join(b.Locks, ","))
	case !sameSet(a.Faults, b.Faults):
		return fmt.Sprintf("faults %s vs %s", strings.Join(a.Faults, ","), strings.Join(b.Faults, ","))
	case a.Count != b.Count:
		return fmt.Sprintf("--count %d vs %d", a.Count, b.Count)
	case a.Seed != b.Seed:
		return fmt.Sprintf("--seed %d vs %d", a.Seed, b.Seed)
	}
	return ""
}
