package main

import (
	"bufio"
	"context"
	"encoding/json"
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

// suiteWallTime is figure 5: `make test` is `go vet ./...` then `go test -p 1 -count=1 ./...`;
// the runner package's test runs the whole shipped scenario library once.
func suiteWallTime(ctx context.Context, c config) (string, error) {
	vetArgs := []string{"vet", c.suitePkgs}
	t := time.Now()
	vet := exec.CommandContext(ctx, "go", vetArgs...)
	vet.Stdout, vet.Stderr = os.Stderr, os.Stderr
	vetErr := vet.Run()
	vetTook := time.Since(t)

	args := []string{"test", "-p", "1", "-count=1", "-json", "-timeout", "20m", c.suitePkgs}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	t = time.Now()
	if err := cmd.Start(); err != nil {
		return "", err
	}
	pkgs := map[string]*testEvent{}
	var tests []testEvent // top-level tests that finished
	var failedSubtests []string
	// Keep the raw test2json stream: a failed scenario's message (which verdict field differed)
	// is only in there.
	var raw *os.File
	if rawDir != "" {
		if f, err := os.Create(filepath.Join(rawDir, "suite.jsonl")); err == nil {
			raw = f
			defer raw.Close()
		}
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	for lines.Scan() {
		if raw != nil {
			raw.Write(append(lines.Bytes(), '\n'))
		}
		var e testEvent
		if json.Unmarshal(lines.Bytes(), &e) != nil {
			continue
		}
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
	}
	testErr := cmd.Wait()
	wall := time.Since(t)

	var b strings.Builder
	fmt.Fprintf(&b, "## 5. Suite wall time\n\n")
	fmt.Fprintf(&b, "Commands: `go %s`, then `go %s` (what `make test` runs; timed once, n = 1: the suite is the "+
		"longest part of this benchmark).\n\n", strings.Join(vetArgs, " "), shellJoin(args))
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
	fmt.Fprintf(&b, "| `go test -p 1 %s` (compiling included) | %s | %s; %d top-level tests, %d failed |\n",
		c.suitePkgs, wall.Round(100*time.Millisecond), status(testErr), len(tests), failed)
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
	b.WriteString("\nThe suite runs packages one at a time (`-p 1`): scenario verdicts and lock tests depend on real " +
		"timing, and on 2 cores running them side by side only adds scheduling noise. Most of its time is real time " +
		"that scenarios and fault tests must wait (TTLs expiring, pauses, ZooKeeper sessions), not CPU.\n")
	if ctx.Err() != nil {
		return b.String(), ctx.Err()
	}
	if testErr != nil {
		return b.String(), fmt.Errorf("go test failed (%d tests)", failed)
	}
	return b.String(), nil
}
