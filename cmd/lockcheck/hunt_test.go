package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history/synth"
	"github.com/lockcheck/lockcheck/scenarios"
)

// The whole path on real servers: a hunt on set-nx-px under pauses finds a double ownership,
// shrinks it to at most two faults, and the shrunk.yaml it writes passes lockcheck run as it is
// (its expect block states the violation). Then shrink's two refusals: a run with no double
// ownership (nothing to shrink), and one whose faults cannot have caused the one it shows (a
// synthetic history): no schedule reproduces it, and nothing is written.
func TestHuntAndShrinkEndToEnd(t *testing.T) {
	bin := lockcheck(t)
	repo, _ := filepath.Abs("../..")
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(err)
	}
	results := t.TempDir()
	started := time.Now()
	out, code := run("hunt", "set-nx-px", "--faults", "pause", "--runs", "5", "--each", "10s", "--check", "3", "--results", results)
	if code != exitMismatch {
		t.Fatalf("hunt: exit %d, want 1 (found):\n%s", code, out)
	}
	m := regexp.MustCompile(`wrote (\S+/shrunk\.yaml)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("hunt found but wrote no shrunk.yaml:\n%s", out)
	}
	path := m[1]
	t.Logf("hunt and shrink took %s:\n%s", time.Since(started).Round(time.Second), out)
	sc, err := scenarios.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sc.Nemesis); n < 1 || n > 2 || sc.Expect.MutualExclusion != "violated" {
		t.Fatalf("shrunk.yaml has %d faults (want 1..2), expects mutual_exclusion %q", n, sc.Expect.MutualExclusion)
	}
	for _, e := range sc.Nemesis {
		if e.Random != nil || (e.Point == "" && e.At == 0) {
			t.Fatalf("shrunk.yaml keeps an unplanned fault: %+v", e)
		}
	}
	text, _ := os.ReadFile(path)
	rate := regexp.MustCompile(`# reproduced in (\d+) of 3 runs`).FindSubmatch(text)
	if rate == nil || !strings.Contains(sc.Description, "Shrunk by lockcheck shrink from run") {
		t.Fatalf("shrunk.yaml lacks its reproduction rate or its origin:\n%s", text)
	}
	// Every trial it was accepted on showed the violation; the final check is a rate, not a
	// certainty, and the run below is the gate.
	if n, _ := strconv.Atoi(string(rate[1])); n < 2 {
		t.Fatalf("the shrunk scenario reproduced in only %d of 3 runs:\n%s", n, text)
	}
	out, code = run("run", "--results", results, path)
	if code != exitMatch || !strings.Contains(out, "verdict matches expect") {
		t.Fatalf("lockcheck run shrunk.yaml: exit %d:\n%s", code, out)
	}

	good := t.TempDir()
	if _, err := synth.WriteRun(good, synth.Options{Events: 600}); err != nil {
		t.Fatal(err)
	}
	out, code = run("shrink", good)
	if code != exitHarness || !strings.Contains(out, "no double ownership: nothing to shrink") {
		t.Fatalf("shrink of a correct run: exit %d:\n%s", code, out)
	}

	// Two clients overlap in the history, but its only faults are short pauses of waiters.
	odd := t.TempDir()
	if _, err := synth.WriteRun(odd, synth.Options{Events: 600, DoubleOwnership: 1, Pauses: 2}); err != nil {
		t.Fatal(err)
	}
	out, code = run("shrink", odd)
	if code != exitMismatch || !strings.Contains(out, "no planned schedule reproduced the violation") {
		t.Fatalf("shrink of a run its faults cannot explain: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(odd, "shrunk.yaml")); err == nil {
		t.Fatal("shrink wrote shrunk.yaml though nothing reproduced")
	}
}
