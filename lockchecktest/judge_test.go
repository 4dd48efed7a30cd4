package lockchecktest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/lockchecktest"
	"github.com/lockcheck/lockcheck/locks"
)

// Designs registered for these tests, in every process of the test binary: a lock on PostgreSQL
// (the constructor of lockcheck's pg-advisory, as a project's own), and releases of the fenced
// lease: one at v1.2.0, and two of another name.
func init() {
	pg, err := locks.Get("pg-advisory")
	if err != nil {
		panic(err)
	}
	lockchecktest.Register(lockchecktest.Design{Name: "our-pg-lock", Service: lockchecktest.PostgreSQL, Token: pg.Token, New: pg.New})
	lockchecktest.Register(lockchecktest.Design{Name: "versioned-lease", Version: "v1.2.0", New: newFencedLease, Token: "INCR", Expires: true})
	for _, v := range []string{"v1", "v2"} {
		lockchecktest.Register(lockchecktest.Design{Name: "two-releases", Version: v, New: newFencedLease, Token: "INCR", Expires: true})
	}
}

// A lockchecktest run's folder is judged by any lockcheck, which has not heard of the test's
// design: its scenario.yaml records what judging needs (the service: PostgreSQL's db1, which the
// crash names), and lockcheck check reaches the test's own verdict without starting anything.
func TestRunFolderIsJudgedAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("real PostgreSQL")
	}
	results := t.TempDir()
	for _, d := range []string{results, filepath.Dir(results)} {
		os.Chmod(d, 0o755) // PostgreSQL, run as its own user when we are root, must reach its folder
	}
	v := lockchecktest.Run(t, lockchecktest.Check{Lock: "our-pg-lock", Scenario: "crash-restart-node", Results: results})
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/lockcheck").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "check", v.Dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "outcome: "+strings.ToUpper(string(v.Outcome[:1]))+string(v.Outcome[1:])) {
		t.Fatalf("lockcheck check %s (the test's outcome: %s): %v\n%s", v.Dir, v.Outcome, err, out)
	}
	// It judges; it does not run: the design's code is in this test.
	out, err = exec.Command(bin, "run", "--results", t.TempDir(), filepath.Join(v.Dir, "scenario.yaml")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "a Go test registered it (lockchecktest)") {
		t.Errorf("lockcheck run of the folder's scenario: %v\n%s", err, out)
	}
}

// Count runs a check several times, as lockcheck run --count does: the verdict says how many
// matched, and a scenario's sometimes: block is judged against its rate over them. A design's
// version names it in every report.
func TestCountSometimesAndVersion(t *testing.T) {
	src, err := os.ReadFile("testdata/sometimes-fenced-lease.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scenario := func(rate string) string {
		path := filepath.Join(t.TempDir(), "sometimes-versioned-lease.yaml")
		text := strings.NewReplacer("RATE", rate, "fenced-lease", "versioned-lease").Replace(string(src))
		os.WriteFile(path, []byte(text), 0o644)
		return path
	}
	r := &recorder{TB: t}
	v := lockchecktest.Run(r, lockchecktest.Check{Scenario: scenario("1/1"), Count: 3})
	if v.Runs != 3 || v.Matched != 3 || v.Shown != 3 || !v.Consistent || len(r.errors) > 0 ||
		v.Sometimes != "3 of 3 runs showed the lock was taken at least twice: consistent with its stated rate 1/1 (accepted 100–100%)" {
		t.Errorf("3 runs of a control: runs %d, matched %d, shown %d, %q (errors %q)", v.Runs, v.Matched, v.Shown, v.Sometimes, r.errors)
	}
	if v.Lock != "versioned-lease@v1.2.0" {
		t.Errorf("the design is named %q, want versioned-lease@v1.2.0", v.Lock)
	}
	for _, f := range []string{"history.jsonl", "report.html"} {
		if b, _ := os.ReadFile(filepath.Join(v.Dir, f)); !strings.Contains(string(b), "versioned-lease@v1.2.0") {
			t.Errorf("%s does not name the release", f)
		}
	}
	// An outcome every run shows, stated as never seen: 3 of 3 contradicts it.
	r = &recorder{TB: t}
	v = lockchecktest.Run(r, lockchecktest.Check{Scenario: scenario("0/10"), Count: 3})
	if v.Consistent || len(r.errors) != 1 || !strings.Contains(r.errors[0], "3 of 3 runs showed the lock was taken at least twice: NOT consistent") {
		t.Errorf("a rate the runs contradict: consistent %v, errors %q", v.Consistent, r.errors)
	}
	// Two releases of one name: each by its version; the bare name is ambiguous.
	if _, err := lockchecktest.Verify(context.Background(), lockchecktest.Check{Lock: "two-releases", Scenario: "none"}); err == nil ||
		!strings.Contains(err.Error(), "two-releases@v1, two-releases@v2") {
		t.Errorf("a name registered at two versions: %v", err)
	}
}
