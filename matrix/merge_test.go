package matrix

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/shard"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/workloads"
)

// shardOf builds shard k/n of a grid the way Run would, with every cell's status given.
func shardOf(k, n int, locks, faults []string, status Status) Part {
	s := shard.Shard{K: k, N: n}
	m := &Matrix{Started: time.Unix(int64(1000+k), 0), Wall: time.Duration(k) * time.Second, Locks: locks, Faults: faults,
		Count: 1, Seed: 1, Shard: &s}
	for _, l := range locks {
		for _, f := range faults {
			if s.Has(CellKey(l, f)) {
				m.Cells = append(m.Cells, Cell{Lock: l, Fault: f, Status: status, Runs: 1, Agree: 1})
			}
		}
	}
	return Part{Folder: "shard-" + s.String(), M: m}
}

var (
	testLocks  = []string{"set-nx-px", "setnx-del", "redlock", "zk"}
	testFaults = []string{"none", "kill-holder", "pause-after-acquire"}
)

func TestMergePutsTheGridBackInOrder(t *testing.T) {
	parts := []Part{shardOf(3, 3, testLocks, testFaults, Safe), shardOf(1, 3, testLocks, testFaults, Safe), shardOf(2, 3, testLocks, testFaults, Safe)}
	m, err := Merge(parts, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Cells) != len(testLocks)*len(testFaults) || m.Merged != 3 || m.Shard != nil {
		t.Fatalf("merged %d cells from %d shards (shard %v)", len(m.Cells), m.Merged, m.Shard)
	}
	i := 0
	for _, l := range testLocks {
		for _, f := range testFaults {
			if c := m.Cells[i]; c.Lock != l || c.Fault != f {
				t.Fatalf("cell %d is %s × %s, want %s × %s (row by row)", i, c.Lock, c.Fault, l, f)
			}
			i++
		}
	}
	if !m.Started.Equal(time.Unix(1001, 0)) || m.Wall != 3*time.Second {
		t.Errorf("started %v took %v: want the earliest start and the longest shard", m.Started, m.Wall)
	}
	var md strings.Builder
	m.Markdown(&md, "")
	if !strings.Contains(md.String(), "merged from 3 shards") || strings.Contains(md.String(), "| — |") {
		t.Errorf("merged page:\n%s", md.String())
	}
}

// The order of --locks and --faults does not change a cell's shard: such shards merge.
func TestMergeAcceptsTheSameGridInAnotherOrder(t *testing.T) {
	reversed := []string{"zk", "redlock", "setnx-del", "set-nx-px"}
	if _, err := Merge([]Part{shardOf(1, 2, testLocks, testFaults, Safe), shardOf(2, 2, reversed, testFaults, Safe)}, false); err != nil {
		t.Fatal(err)
	}
}

func TestMergeRefusesWhatDoesNotFit(t *testing.T) {
	other := shardOf(2, 3, []string{"set-nx-px"}, testFaults, Safe)
	outside := shardOf(2, 3, testLocks, testFaults, Safe)
	outside.M.Cells = append(outside.M.Cells, shardOf(1, 3, testLocks, testFaults, Safe).M.Cells[0])
	seeded := shardOf(2, 3, testLocks, testFaults, Safe)
	seeded.M.Seed = 7
	whole := shardOf(1, 3, testLocks, testFaults, Safe)
	whole.M.Shard = nil
	cases := []struct {
		name  string
		parts []Part
		want  string
	}{
		{"different grids", []Part{shardOf(1, 3, testLocks, testFaults, Safe), other}, "different grids: locks"},
		{"different seeds", []Part{shardOf(1, 3, testLocks, testFaults, Safe), seeded}, "--seed 1 vs 7"},
		{"different splits", []Part{shardOf(1, 3, testLocks, testFaults, Safe), shardOf(2, 4, testLocks, testFaults, Safe)}, "different splits"},
		{"overlapping", []Part{shardOf(1, 3, testLocks, testFaults, Safe), shardOf(1, 3, testLocks, testFaults, Safe)}, "shard 1/3 given twice"},
		{"cell outside its shard", []Part{shardOf(1, 3, testLocks, testFaults, Safe), outside}, "is not in shard 2/3"},
		{"missing", []Part{shardOf(2, 3, testLocks, testFaults, Safe)}, "shard(s) 1/3, 3/3 missing"},
		{"not a shard", []Part{whole}, "not a shard"},
		{"nothing", nil, "no shards"},
	}
	for _, c := range cases {
		if _, err := Merge(c.parts, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

func TestMergeWithMissingShardsSaysWhich(t *testing.T) {
	m, err := Merge([]Part{shardOf(2, 3, testLocks, testFaults, Safe)}, true)
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	m.Markdown(&md, "")
	if strings.Join(m.MissingShards, ",") != "1/3,3/3" || !strings.Contains(md.String(), "INCOMPLETE: shard(s) 1/3, 3/3 missing") {
		t.Fatalf("missing %v\n%s", m.MissingShards, md.String())
	}
}

// A small grid run whole and in three shards (each written to its own results folder, as three
// CI jobs would) merges to the same cells with the same statuses. The cells are chosen so that
// no stall of a busy machine can change a status: setnx-del has no lease, so no pause breaks it;
// set-nx-px's 2 s pause outlives its lease every time, a stall only adds to it, and fencing
// rescues it all the same. (Without a fault, set-nx-px's status depends on the machine: a 0.5 s
// stall of a holder is a real violation.)
func TestShardedGridMergesToTheUnshardedCells(t *testing.T) {
	locks, faults := []string{"set-nx-px", "setnx-del"}, []string{"pause-after-acquire", "pause-before-write"}
	opts := func(results string) Options {
		return Options{Locks: locks, Faults: faults,
			Runner: runner.Options{ResultsDir: results, Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv)}}
	}
	whole, err := Run(context.Background(), opts(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	unpacked := t.TempDir() // where a merge job would download the shards' artifacts
	for k := 1; k <= 3; k++ {
		results := t.TempDir()
		o := opts(results)
		o.Shard = shard.Shard{K: k, N: 3}
		m, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Cells) == 0 || len(m.Cells) == len(locks)*len(faults) {
			t.Errorf("shard %d/3 ran %d of %d cells: the split should divide this grid", k, len(m.Cells), len(locks)*len(faults))
		}
		if _, err := WriteFolder(results, m); err != nil {
			t.Fatal(err)
		}
		moved := filepath.Join(unpacked, fmt.Sprintf("shard-%d", k))
		if err := os.Rename(results, moved); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, moved)
	}
	var parts []Part
	for _, d := range dirs {
		p, err := ReadFolder(d)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	merged, err := Merge(parts, false)
	if err != nil {
		t.Fatal(err)
	}
	summary := func(m *Matrix) string {
		var b strings.Builder
		for _, c := range m.Cells {
			b.WriteString(CellKey(c.Lock, c.Fault) + ": " + string(c.Status) + "\n")
		}
		return b.String()
	}
	if got, want := summary(merged), summary(whole); got != want {
		t.Fatalf("merged cells:\n%s\nunsharded cells:\n%s", got, want)
	}
	for _, c := range whole.Cells {
		if want := map[string]Status{"set-nx-px": Rescued, "setnx-del": Safe}[c.Lock]; c.Status != want {
			t.Errorf("%s × %s is %s (%s), want %s: the grid this test relies on changed", c.Lock, c.Fault, c.Status, c.Detail, want)
		}
	}
	// The merged folder's pages link each cell to its run, in the shard's folder as unpacked.
	out := t.TempDir()
	dir, err := WriteFolder(out, merged)
	if err != nil {
		t.Fatal(err)
	}
	var back Matrix
	b, _ := os.ReadFile(filepath.Join(dir, JSONFile))
	if err := json.Unmarshal(b, &back); err != nil || len(back.Cells) != 4 || back.Merged != 3 {
		t.Fatalf("merged matrix.json: %v, %d cells", err, len(back.Cells))
	}
	for _, c := range back.Cells {
		if len(c.Outcomes) == 0 || !strings.HasPrefix(c.Outcomes[0].Dir, unpacked) || !exists(filepath.Join(c.Outcomes[0].Dir, runner.HistoryFile)) {
			t.Errorf("%s × %s: run folder %v is not where the shard left it", c.Lock, c.Fault, c.Outcomes)
		}
	}
}
