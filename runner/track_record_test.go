package runner

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/scenarios"
)

// The track record (scenarios/track-record/, docs/TRACK-RECORD.md): published lock bugs, each in
// the version that shipped it and, where one exists, the version that fixed it. Every scenario
// must reach the verdict its expect block states. A file with a line starting "# slow:" (one that
// builds a server from source first, say) is left to `make track-record`, which runs them all.
// Libraries named at a version are built into the user's cache as for any run, before the runs.
func TestTrackRecordScenariosReachTheirExpectedVerdicts(t *testing.T) {
	files, err := filepath.Glob("../scenarios/track-record/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no track-record scenarios found: %v", err)
	}
	// Libraries at a version are built first, one after another, so that a build (minutes of
	// compiling on a fresh machine) never runs beside a scenario: the scenarios then run two at
	// a time, as the shipped ones do, each with its own servers, ports, folder and marker.
	loaded := map[string]*scenarios.Scenario{}
	for _, f := range files {
		if slowMark(t, f) != "" {
			continue
		}
		sc, err := scenarios.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Prepare(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		loaded[f] = sc
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			if why := slowMark(t, f); why != "" {
				t.Skipf("left to make track-record: %s", why)
			}
			t.Parallel()
			sc := loaded[f]
			o, marker := byolOptions(t)
			res := runOnce(t, sc, o)
			if !res.Matches {
				t.Fatalf("verdict does not match expect: %v\n%s\nrun folder: %s", res.Mismatches, res.Verdict.Summary, res.Dir)
			}
			assertClientDesigns(t, sc, res.Dir)
			assertNothingLeft(t, res.Dir, marker)
		})
	}
}

// slowMark is the reason a scenario file gives for being slow ("# slow: why"), or "".
func slowMark(t *testing.T, file string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(bytes.NewReader(src))
	for lines.Scan() {
		if why, ok := strings.CutPrefix(lines.Text(), "# slow:"); ok {
			return strings.TrimSpace(why)
		}
	}
	return ""
}

// assertClientDesigns checks that the history names the design each client ran.
func assertClientDesigns(t *testing.T, sc *scenarios.Scenario, dir string) {
	t.Helper()
	got := map[string]string{}
	err := history.ScanFile(filepath.Join(dir, HistoryFile), func(_ int, e *history.Event) error {
		if e.Process == history.Controller && e.F == history.ClientDesign {
			got[e.Target] = e.Design
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sc.ClientNames() {
		if got[c] != sc.LockOf(c) {
			t.Errorf("history says %s ran %q, the scenario %q", c, got[c], sc.LockOf(c))
		}
	}
}
