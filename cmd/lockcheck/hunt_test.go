package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history/synth"
	"github.com/lockcheck/lockcheck/hunt"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/shrink"
)

// The whole path on real servers: a hunt for broken promises on set-nx-px under pauses finds only
// holders that outlived their leases (K2): counted, not a find. Asked for any double ownership,
// it finds one, shrinks it to at most two faults, and the shrunk.yaml it writes passes lockcheck
// run as it is (its expect block states the violation). Then shrink's two refusals: a run with no
// double ownership (nothing to shrink), and one whose faults cannot have caused the one it shows
// (a synthetic history): no schedule reproduces it, and nothing is written.
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
	out, code := run("hunt", "set-nx-px", "--faults", "pause", "--runs", "3", "--each", "8s", "--results", results)
	if code != exitMatch || !strings.Contains(out, "nothing found") || !regexp.MustCompile(`[1-9]\d* window\(s\) a holder outlived its promise \(K2\)`).MatchString(out) ||
		!strings.Contains(out, " 0 broken promise(s)") {
		t.Fatalf("hunt for broken promises on set-nx-px: exit %d, want 0 with holders that outlived their promises counted:\n%s", code, out)
	}
	started := time.Now()
	out, code = run("hunt", "set-nx-px", "--faults", "pause", "--find", "any", "--runs", "5", "--each", "10s", "--check", "3", "--results", results)
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
	// violated in every run of the final check, or in some: then a sometimes: block says how often
	if n := len(sc.Nemesis); n < 1 || n > 2 || (sc.Expect.MutualExclusion != "violated") == (sc.Sometimes == nil) {
		t.Fatalf("shrunk.yaml has %d faults (want 1..2), expects mutual_exclusion %q, sometimes %+v", n, sc.Expect.MutualExclusion, sc.Sometimes)
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

// What shrink writes loads back as the scenario it shrank to; a result the final check saw in
// only some runs states its rate in a sometimes: block instead of expecting the violation.
func TestShrunkTextLoadsBack(t *testing.T) {
	sc, err := scenarios.New(scenarios.Scenario{Name: "hunt-set-nx-px-pause-hunt", Lock: "set-nx-px", Clients: 4,
		TTL: scenarios.Duration(400 * time.Millisecond), Duration: scenarios.Duration(3 * time.Second), Claims: []string{"K2"},
		Nemesis: []scenarios.Entry{{Fault: nemesis.Fault{Kind: "pause", Target: "client-1", Point: "after-acquire", Occurrence: 1,
			For: scenarios.Duration(480 * time.Millisecond)}}}})
	if err != nil {
		t.Fatal(err)
	}
	res := shrink.Result{Scenario: sc, Before: 7, After: 1, Trials: 30}
	for _, c := range []struct {
		shown int
		every bool
		find  checker.WindowClass
	}{{10, true, hunt.FindAny}, {7, false, hunt.FindAny}, {10, true, hunt.FindBroken}, {7, false, hunt.FindBroken}} {
		path := filepath.Join(t.TempDir(), "shrunk.yaml")
		text, err := shrunkText(res, "results/hunt-set-nx-px-pause-hunt/20261125T181413.198", path, c.shown, 10, time.Minute, true, c.find)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path, text, 0o644)
		got, err := scenarios.Load(path)
		if err != nil {
			t.Fatalf("%s\n%v", text, err)
		}
		want := fmt.Sprintf("# reproduced in %d of 10 runs", c.shown)
		words := "from run 20261125T181413.198 (7 → 1 faults): client-1 paused for 1.2 TTLs (480ms) right after its first acquisition"
		if !strings.Contains(string(text), want) || got.Name != "shrunk-hunt-set-nx-px-pause-hunt" || len(got.Claims) > 0 ||
			!strings.Contains(got.Description, words) {
			t.Errorf("shrunk.yaml:\n%s", text)
		}
		if c.every != (got.Expect.MutualExclusion == "violated") || c.every != (got.Sometimes == nil) {
			t.Errorf("%d of 10: expect %+v, sometimes %+v", c.shown, got.Expect, got.Sometimes)
		}
		// A broken promise shrinks to a scenario that expects a broken promise, not just two holders.
		promises := got.Expect.Promises
		if got.Sometimes != nil {
			promises = got.Sometimes.Expect.Promises
		}
		if (c.find == hunt.FindBroken) != (promises == "broken") {
			t.Errorf("shrunk for %q: promises %q", c.find, promises)
		}
	}
}
