package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// testEvent is one line of `go test -json` (test2json).
type testEvent struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// suiteWallTime is figure 5: what `make test` runs after its installs and build: `go vet
// ./...`, the pure packages' tests two packages at a time, then the packages with real servers
// two at a time, the runner package first (the Makefile's PURE_PKGS and REAL_PKGS); the runner
// package's test runs the whole shipped scenario library once. With --suite other than ./...,
// those packages at -p 1.
func suiteWallTime(ctx context.Context, c config) (string, error) {
	vetArgs := []string{"vet", c.suitePkgs}
	t := time.Now()
	vet := exec.CommandContext(ctx, "go", vetArgs...)
	vet.Stdout, vet.Stderr = os.Stderr, os.Stderr
	vetErr := vet.Run()
	vetTook := time.Since(t)

	parts := [][]string{{"test", "-p", "1", "-count=1", "-json", "-timeout", "20m", c.suitePkgs}}
	if c.suitePkgs == "./..." {
		lists, err := exec.CommandContext(ctx, "make", "-s", "--no-print-directory", "test-packages").Output()
		lines := strings.Split(strings.TrimSpace(string(lists)), "\n")
		if err != nil || len(lines) != 2 {
			return "", fmt.Errorf("make test-packages (the pure and the real-server packages): %v", err)
		}
		parts = [][]string{
			append([]string{"test", "-p", "2", "-count=1", "-json", "-timeout", "20m"}, strings.Fields(lines[0])...),
			append([]string{"test", "-p", "2", "-count=1", "-json", "-timeout", "20m"}, strings.Fields(lines[1])...),
		}
	}
	// Keep the raw test2json stream: a failed scenario's message (which verdict field differed)
	// is only in there.
	var raw *os.File
	if rawDir != "" {
		if f, err := os.Create(filepath.Join(rawDir, "suite.jsonl")); err == nil {
			raw = f
			defer raw.Close()
		}
	}
	pkgs := map[string]*testEvent{}
	var tests []testEvent // top-level tests that finished
	var failedSubtests []string
	var walls []time.Duration
	var testErr error
	for _, args := range parts {
		wall, err := runTestJSON(ctx, args, raw, func(e testEvent) {
			switch {
			case e.Action != "pass" && e.Action != "fail" && e.Action != "skip":
			case e.Test == "":
				ev := e
				pkgs[e.Package] = &ev
			case !strings.Contains(e.Test, "/"):
				tests = append(tests, e)
			case e.Action == "fail":
				failedSubtests = append(failedSubtests, e.Test)
			}
		})
		walls = append(walls, wall)
		testErr = errors.Join(testErr, err)
	}
	var wall time.Duration
	for _, w := range walls {
		wall += w
	}

	var b strings.Builder
	fmt.Fprintf(&b, "## 5. Suite wall time\n\n")
	var cmds []string
	for _, args := range parts {
		cmds = append(cmds, "`go "+shellJoin(shorten(args))+"`")
	}
	fmt.Fprintf(&b, "Commands: `go %s`, then %s (what `make test` runs; timed once, n = 1: the suite is the "+
		"longest part of this benchmark).\n\n", strings.Join(vetArgs, " "), strings.Join(cmds, ", then "))
	status := func(err error) string {
		if err != nil {
			return "failed: " + err.Error()
		}
		return "passed"
	}
	failed := 0
	for _, e := range tests {
		if e.Action == "fail" {
			failed++
		}
	}
	fmt.Fprintf(&b, "| part | wall time | result |\n| --- | --- | --- |\n")
	fmt.Fprintf(&b, "| `go vet %s` | %s | %s |\n", c.suitePkgs, vetTook.Round(100*time.Millisecond), status(vetErr))
	for i, args := range parts {
		fmt.Fprintf(&b, "| `go %s` (compiling included) | %s | |\n", shellJoin(shorten(args)), walls[i].Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "| go test, all parts | %s | %s; %d top-level tests, %d failed |\n",
		wall.Round(100*time.Millisecond), status(testErr), len(tests), failed)
	fmt.Fprintf(&b, "| **`make test` ≈ both** | **%s** | |\n", (vetTook + wall).Round(time.Second))
	for _, e := range tests {
		if e.Package == "github.com/lockcheck/lockcheck/runner" && e.Test == "TestShippedScenariosReachTheirExpectedVerdicts" {
			fmt.Fprintf(&b, "| scenario library: every shipped scenario once, judged (`runner` %s) | %s | %s |\n", e.Test,
				secs(e.Elapsed), e.Action)
		}
	}
	b.WriteString("\nPer package (test binary's own elapsed time, slowest first):\n\n| package | elapsed | result | slowest test |\n| --- | " +
		"--- | --- | --- |\n")
	var names []string
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return pkgs[names[i]].Elapsed > pkgs[names[j]].Elapsed })
	for _, n := range names {
		var slow testEvent
		for _, e := range tests {
			if e.Package == n && e.Elapsed > slow.Elapsed {
				slow = e
			}
		}
		slowest := ""
		if slow.Test != "" {
			slowest = fmt.Sprintf("%s (%s)", slow.Test, secs(slow.Elapsed))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", strings.TrimPrefix(n, "github.com/lockcheck/lockcheck/"),
			secs(pkgs[n].Elapsed), pkgs[n].Action, slowest)
	}
	var failures []string
	for _, e := range tests {
		if e.Action == "fail" {
			failures = append(failures, fmt.Sprintf("%s %s", strings.TrimPrefix(e.Package, "github.com/lockcheck/lockcheck/"), e.Test))
		}
	}
	if len(failures) > 0 {
		fmt.Fprintf(&b, "\nFailed tests (timing-sensitive verdicts can wobble on a loaded machine; rerun before concluding): "+
			"%s.\n", strings.Join(failures, ", "))
		if len(failedSubtests) > 0 {
			fmt.Fprintf(&b, "Failed subtests: %s (messages in %s).\n", strings.Join(failedSubtests, ", "), filepath.Join(rawDir, "suite.jsonl"))
		}
	}
	b.WriteString("\nThe packages with real servers run two at a time (`-p 2`), the runner package (its scenarios two at a " +
		"time) first: most of their time is real time that scenarios and fault tests must wait (TTLs expiring, pauses, " +
		"ZooKeeper sessions), not CPU. The docker provider's images and the tests that run containers are " +
		"`make test-docker`'s (figure 11 times the image build).\n")
	if ctx.Err() != nil {
		return b.String(), ctx.Err()
	}
	if testErr != nil {
		return b.String(), fmt.Errorf("go test failed (%d tests)", failed)
	}
	return b.String(), nil
}

// runTestJSON runs `go args...` (a go test -json), feeds each event to seen, copies the stream to
// raw, and returns its wall time.
func runTestJSON(ctx context.Context, args []string, raw *os.File, seen func(testEvent)) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	t := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	for lines.Scan() {
		if raw != nil {
			raw.Write(append(lines.Bytes(), '\n'))
		}
		var e testEvent
		if json.Unmarshal(lines.Bytes(), &e) == nil {
			seen(e)
		}
	}
	err = cmd.Wait()
	return time.Since(t), err
}

// shorten is a go test command line without -json and with a long package list summed up.
func shorten(args []string) []string {
	var out []string
	pkgs := 0
	for _, a := range args {
		switch {
		case a == "-json":
		case strings.HasPrefix(a, "./") || strings.HasPrefix(a, "github.com/"):
			pkgs++
		default:
			out = append(out, a)
		}
	}
	if pkgs == 1 {
		return append(out, args[len(args)-1])
	}
	return append(out, fmt.Sprintf("<%d packages>", pkgs))
}
