package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The fixture module in testdata/flaky has tests that fail on some runs only, a test binary
// that dies in the middle of a test, and a package that does not compile. flakes runs them for
// real (go test) and must list exactly the tests that failed at least once.
func TestListsEveryTestThatFailedAtLeastOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"each package in turn", nil},
		// Rounds of every package two at a time with a busy loop beside them (make flakes-load's
		// way) find the same failures.
		{"side by side, under load", []string{"-p", "2", "-load", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) { listsEveryFailure(t, c.args) })
	}
}

func listsEveryFailure(t *testing.T, extra []string) {
	fixture, _ := filepath.Abs("testdata/flaky")
	t.Setenv("FLAKES_FIXTURE_DIR", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := run(append(append([]string{"-C", fixture, "-n", "3"}, extra...), "./..."), &stdout, &stderr)
	out := stdout.String()
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	for _, want := range []string{
		"4 test(s) failed at least once (3 package(s), 9 run(s) in all)",
		"flaky TestFailsOnEvenRuns: failed 1 of 3 run(s)",
		"flaky TestWithSubtests/third: failed 1 of 3 run(s)",
		"flaky/crash (package): failed 1 of 3 run(s)",
		"flaky/broken (package): failed 3 of 3 run(s)",
		"flaky_test.go:9: run 2 is even",                               // the failed run's output
		"TestDiesOnSecondRun was running when the test binary stopped", // who was running at the crash
		`cannot use "text"`, // the compiler's message
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, never := range []string{"TestSteady", "TestWithSubtests:", "TestWithSubtests/steady"} {
		if strings.Contains(out, never) {
			t.Errorf("output lists %q, which never failed:\n%s", never, out)
		}
	}
}

func TestExitsZeroWhenNothingFailed(t *testing.T) {
	fixture, _ := filepath.Abs("testdata/flaky")
	t.Setenv("FLAKES_FIXTURE_DIR", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := run([]string{"-C", fixture, "-n", "2", "-run", "TestSteady", "."}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "no test failed: 1 package(s), 2 run(s) in all") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

func TestBadInputIsAToolError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-n", "0"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-n 0") {
		t.Fatalf("-n 0: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"./no/such/package"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "go list") {
		t.Fatalf("unknown package: exit %d, %s", code, stderr.String())
	}
}

func TestNotJSONIsAnErrorNamingTheLine(t *testing.T) {
	_, err := parseRun(strings.NewReader("{\"Action\":\"start\"}\n{\"Action\":\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("got %v, want an error naming line 2", err)
	}
}
