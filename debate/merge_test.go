package debate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/shard"
)

var testFiles = []string{"k2-set-nx-px.yaml", "k3-redlock.yaml", "a4-redlock.yaml", "mistake-get-then-del.yaml", "k10-set-nx-px.yaml"}

func claimsOf(file string) []string {
	switch {
	case strings.HasPrefix(file, "k2"):
		return []string{"K2"}
	case strings.HasPrefix(file, "k3"):
		return []string{"K3"}
	case strings.HasPrefix(file, "k10"):
		return []string{"K10"}
	case strings.HasPrefix(file, "a4"):
		return []string{"A4"}
	case strings.HasPrefix(file, "mistake"):
		return []string{"M4"}
	}
	return nil
}

// debateShard builds shard k/n of a debate run over testFiles the way the command would.
func debateShard(k, n int) Part {
	s := shard.Shard{K: k, N: n}
	r := Result{Kind: ResultKind, Generated: time.Unix(int64(1000+k), 0), Wall: time.Duration(k) * time.Second, Count: 1, Seeds: 1,
		Scenarios: testFiles, Shard: &s}
	for _, f := range testFiles {
		if s.Has(ShardKey(f)) {
			name := strings.TrimSuffix(f, ".yaml")
			r.Rows = append(r.Rows, Row{Scenario: name, File: "scenarios/debate/" + f, Claims: claimsOf(f), Runs: 1, Matched: 1})
		}
	}
	return Part{File: "shard-" + s.String() + "/DEBATE.json", R: r}
}

func TestMergeRowsInClaimOrder(t *testing.T) {
	res, err := Merge([]Part{debateShard(2, 3), debateShard(3, 3), debateShard(1, 3)}, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res.Rows {
		names = append(names, r.Scenario)
	}
	if got := strings.Join(names, ","); got != "k2-set-nx-px,k3-redlock,k10-set-nx-px,a4-redlock,mistake-get-then-del" {
		t.Fatalf("rows %s, want claim order", got)
	}
	if res.Merged != 3 || res.Wall != 3*time.Second || !res.Generated.Equal(time.Unix(1001, 0)) {
		t.Errorf("merged %d, wall %v, generated %v", res.Merged, res.Wall, res.Generated)
	}
	var md strings.Builder
	res.Report().Markdown(&md)
	if !strings.Contains(md.String(), "Merged from 3 shards") || !strings.Contains(md.String(), "Claims with no scenario yet") {
		t.Errorf("merged report:\n%s", md.String())
	}
}

func TestMergeRefusesDebateShardsThatDoNotFit(t *testing.T) {
	other := debateShard(2, 3)
	other.R.Scenarios = testFiles[:2]
	seeds := debateShard(2, 3)
	seeds.R.Seeds = 20
	outside := debateShard(2, 3)
	outside.R.Rows = append(outside.R.Rows, debateShard(1, 3).R.Rows...)
	whole := debateShard(1, 3)
	whole.R.Shard = nil
	cases := []struct {
		name  string
		parts []Part
		want  string
	}{
		{"different scenarios", []Part{debateShard(1, 3), other}, "different runs: scenarios"},
		{"different seeds", []Part{debateShard(1, 3), seeds}, "--seeds 1 vs 20"},
		{"different splits", []Part{debateShard(1, 3), debateShard(1, 2)}, "different splits"},
		{"overlapping", []Part{debateShard(3, 3), debateShard(3, 3)}, "shard 3/3 given twice"},
		{"row outside its shard", []Part{outside}, "is not in shard 2/3"},
		{"missing", []Part{debateShard(1, 3)}, "shard(s) 2/3, 3/3 missing"},
		{"not a shard", []Part{whole}, "not a shard"},
	}
	for _, c := range cases {
		if _, err := Merge(c.parts, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
	res, err := Merge([]Part{debateShard(1, 3)}, true)
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	res.Report().Markdown(&md)
	if !strings.Contains(md.String(), "INCOMPLETE: shard(s) 2/3, 3/3 missing") || strings.Contains(md.String(), "Claims with no scenario yet") {
		t.Errorf("partial merge report:\n%s", md.String())
	}
}

// A result written by one job and read back elsewhere finds its run folders where they were
// unpacked; JSON of other kinds in the folder is left alone.
func TestFindResultsRebasesRunFolders(t *testing.T) {
	unpacked := filepath.Join(t.TempDir(), "shard-1")
	run := filepath.Join(unpacked, "k2-set-nx-px", "20261121T223234.742")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	p := debateShard(1, 1)
	p.R.ResultsDir, p.R.Out = "results", "results/DEBATE.md"
	p.R.Rows[0].Folder = "results/k2-set-nx-px/20261121T223234.742"
	if err := WriteResult(filepath.Join(unpacked, "DEBATE.json"), p.R); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(unpacked, "repeatability.json"), []byte(`{"rows": []}`), 0o644)
	parts, err := FindResults(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 || parts[0].R.Rows[0].Folder != run {
		t.Fatalf("found %d result(s); first row's folder %q, want %q", len(parts), parts[0].R.Rows[0].Folder, run)
	}
}
