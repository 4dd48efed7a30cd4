package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The CI job matrix as a user runs it: a grid in two shards, each into its own results folder,
// merged into one matrix (md, json, html, JUnit); and the mistakes merge must refuse.
func TestShardedMatrixMergedOnTheCommandLine(t *testing.T) {
	bin := lockcheck(t)
	repo, _ := filepath.Abs("../..")
	root := t.TempDir()
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(err)
	}

	if out, code := run("matrix", "--shard", "0/2"); code != exitHarness || !strings.Contains(out, "K must be between 1 and 2") {
		t.Fatalf("--shard 0/2: exit %d\n%s", code, out)
	}
	// setnx-del × none and setnx-del × kill-holder fall into different shards of two.
	for _, k := range []string{"1", "2"} {
		dir := filepath.Join(root, "shard-"+k)
		out, code := run("matrix", "--locks", "setnx-del", "--faults", "none,kill-holder", "--shard", k+"/2",
			"--results", dir, "--junit", filepath.Join(dir, "junit-matrix.xml"))
		if code != 0 || !strings.Contains(out, "shard "+k+"/2: 1 of the grid's 2 cells") {
			t.Fatalf("shard %s/2: exit %d\n%s", k, code, out)
		}
	}
	shard1, shard2 := filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2")

	merged := filepath.Join(root, "merged")
	out, code := run("merge", "--results", merged, shard1, shard2)
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s", code, out)
	}
	folder := filepath.Join(merged, "matrix", "latest")
	var m struct {
		Cells []struct{ Lock, Fault, Status string }
		// the run folders are found in the shards' folders
		Merged int `json:"merged_shards"`
	}
	b, err := os.ReadFile(filepath.Join(folder, "matrix.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("merged matrix.json: %v\n%s", err, out)
	}
	got := []string{}
	for _, c := range m.Cells {
		got = append(got, c.Lock+" × "+c.Fault+": "+c.Status)
	}
	if strings.Join(got, "; ") != "setnx-del × none: safe; setnx-del × kill-holder: stuck" || m.Merged != 2 {
		t.Fatalf("merged cells %v from %d shards\n%s", got, m.Merged, out)
	}
	for _, f := range []string{"matrix.md", "matrix.html"} {
		if b, err := os.ReadFile(filepath.Join(folder, f)); err != nil || !strings.Contains(string(b), "merged from 2 shards") {
			t.Errorf("%s: %v", f, err)
		}
	}
	var report struct {
		Tests int `xml:"tests,attr"`
	}
	if b, err := os.ReadFile(filepath.Join(folder, "junit.xml")); err != nil || xml.Unmarshal(b, &report) != nil || report.Tests != 2 {
		t.Errorf("merged junit.xml: %v, %d test cases, want 2", err, report.Tests)
	}
	html, _ := os.ReadFile(filepath.Join(folder, "matrix.html"))
	if !strings.Contains(string(html), "shard-1/matrix-setnx-del-kill-holder/") {
		t.Errorf("the merged page does not link the cell to its run in the shard's folder")
	}

	// The gate applies to the merged grid: the stuck cell fails --require safe.
	if out, code := run("merge", "--results", merged, "--require", "safe", shard1, shard2); code != exitMismatch || !strings.Contains(out,
		"1 cell(s) fail --require safe") {
		t.Errorf("merge --require safe: exit %d\n%s", code, out)
	}
	if out, code := run("merge", "--results", merged, shard1, shard1); code != exitHarness || !strings.Contains(out, "shard 1/2 given twice") {
		t.Errorf("overlapping shards: exit %d\n%s", code, out)
	}
	if out, code := run("merge", "--results", merged, shard2); code != exitHarness || !strings.Contains(out, "shard(s) 1/2 missing") {
		t.Errorf("a missing shard: exit %d\n%s", code, out)
	}
	if out, code := run("merge", "--results", merged, "--allow-missing", shard2); code != exitHarness || !strings.Contains(out, "INCOMPLETE: "+
		"shard(s) 1/2 missing") {
		t.Errorf("--allow-missing: exit %d\n%s", code, out)
	}
	if out, code := run("merge", t.TempDir()); code != exitHarness || !strings.Contains(out, "no matrix") {
		t.Errorf("a folder with nothing to merge: exit %d\n%s", code, out)
	}
}

// The debate in two shards, merged into one DEBATE.md, JSON and JUnit report.
func TestShardedDebateMergedOnTheCommandLine(t *testing.T) {
	bin := lockcheck(t)
	repo, _ := filepath.Abs("../..")
	root := t.TempDir()
	scenariosDir := filepath.Join(root, "scenarios")
	os.Mkdir(scenariosDir, 0o755)
	// Two quick controls that fall into different shards of two: setnx-del without faults, whose
	// verdict no stall of a busy machine can change (it has no lease to outlive).
	src, err := os.ReadFile(filepath.Join(repo, "scenarios", "no-faults-setnx-del.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"setnx-del-a", "setnx-del-b"} {
		text := strings.Replace(string(src), "name: no-faults-setnx-del", "name: "+name, 1)
		if err := os.WriteFile(filepath.Join(scenariosDir, name+".yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(err)
	}
	if out, code := run("debate", "--scenarios", scenariosDir, "--shard", "1/2", "--record", filepath.Join(root,
		"rec.json")); code != exitHarness || !strings.Contains(out, "--record with --shard") {
		t.Fatalf("--record with --shard: exit %d\n%s", code, out)
	}
	var dirs []string
	for _, k := range []string{"1", "2"} {
		dir := filepath.Join(root, "shard-"+k)
		out, code := run("debate", "--scenarios", scenariosDir, "--shard", k+"/2", "--results", dir,
			"--out", filepath.Join(dir, "DEBATE.md"), "--junit", filepath.Join(dir, "junit-debate.xml"), "--repeatability", "")
		if code != 0 {
			t.Fatalf("debate shard %s/2: exit %d\n%s", k, code, out)
		}
		md, _ := os.ReadFile(filepath.Join(dir, "DEBATE.md"))
		if !strings.Contains(string(md), "This is shard "+k+"/2: 1 of the run's 2 scenarios") {
			t.Fatalf("shard %s/2 report:\n%s", k, md)
		}
		dirs = append(dirs, dir)
	}
	out := filepath.Join(root, "merged", "DEBATE.md")
	text, code := run(append([]string{"merge", "--out", out}, dirs...)...)
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s", code, text)
	}
	md, _ := os.ReadFile(out)
	for _, want := range []string{"Merged from 2 shards", "**2 of 2** scenarios", "### setnx-del-a", "### setnx-del-b", "shard-1/setnx-del-a/"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("merged DEBATE.md lacks %q:\n%s", want, md)
		}
	}
	var res struct {
		Rows   []struct{ Scenario string }
		Merged int `json:"merged_shards"`
	}
	if b, err := os.ReadFile(filepath.Join(root, "merged", "DEBATE.json")); err != nil || json.Unmarshal(b, &res) != nil ||
		len(res.Rows) != 2 || res.Merged != 2 {
		t.Errorf("merged DEBATE.json: %v %+v", err, res)
	}
	var report struct {
		Tests int `xml:"tests,attr"`
	}
	if b, err := os.ReadFile(filepath.Join(root, "merged", "DEBATE.junit.xml")); err != nil || xml.Unmarshal(b, &report) != nil || report.Tests != 2 {
		t.Errorf("merged DEBATE.junit.xml: %v, %d test cases, want 2", err, report.Tests)
	}
}
