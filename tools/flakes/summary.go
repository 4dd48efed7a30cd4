package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// event is one line of `go test -json` (see `go doc cmd/test2json`).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
	ImportPath  string // build-output and build-fail lines name the package here
}

// packageLevel stands for a failure no test owns: a build error, a panic or timeout that killed
// the test binary, a failing TestMain.
const packageLevel = "(package)"

// runResult is what one `go test -json` of one package showed.
type runResult struct {
	failed map[string]string // failed test (or packageLevel) -> its output in this run
	passed map[string]bool
}

// parseRun reads one package's `go test -json` stream. exitErr is the go command's own failure,
// if any: a run that exits non-zero with no failed test is a package-level failure.
func parseRun(r io.Reader, exitErr error) (runResult, error) {
	res := runResult{failed: map[string]string{}, passed: map[string]bool{}}
	output := map[string]*strings.Builder{} // per test; "" for the package
	out := func(test string) *strings.Builder {
		b, ok := output[test]
		if !ok {
			b = &strings.Builder{}
			output[test] = b
		}
		return b
	}
	finished := map[string]bool{}
	started := []string{}
	packageFailed := false
	var raw strings.Builder // lines that are not JSON: the go command's own messages

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Bytes()
		if len(text) == 0 || text[0] != '{' {
			raw.Write(text)
			raw.WriteByte('\n')
			continue
		}
		var e event
		if err := json.Unmarshal(text, &e); err != nil {
			return res, fmt.Errorf("go test -json output line %d: %w", line, err)
		}
		switch e.Action {
		case "run":
			started = append(started, e.Test)
		case "output", "build-output":
			out(e.Test).WriteString(e.Output)
		case "pass", "skip":
			if e.Test != "" {
				finished[e.Test] = true
				if e.Action == "pass" {
					res.passed[e.Test] = true
				}
			}
		case "fail", "build-fail":
			if e.Test == "" {
				packageFailed = true
				continue
			}
			finished[e.Test] = true
			res.failed[e.Test] = out(e.Test).String()
		}
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("reading go test -json output: %w", err)
	}

	// A parent test fails when a subtest does: keep only the innermost failures of each run.
	for name := range res.failed {
		for other := range res.failed {
			if strings.HasPrefix(other, name+"/") {
				delete(res.failed, name)
				break
			}
		}
	}
	if len(res.failed) == 0 && (packageFailed || exitErr != nil) {
		var b strings.Builder
		b.WriteString(raw.String())
		if o, ok := output[""]; ok {
			b.WriteString(o.String())
		}
		// Tests that started and never finished were running when the binary died.
		for _, name := range started {
			if !finished[name] {
				fmt.Fprintf(&b, "--- %s was running when the test binary stopped:\n%s", name, out(name).String())
			}
		}
		if exitErr != nil && b.Len() == 0 {
			fmt.Fprintf(&b, "go test: %v\n", exitErr)
		}
		res.failed[packageLevel] = b.String()
	}
	return res, nil
}

// tally collects the runs of every package (add may be called from several goroutines).
type tally struct {
	mu       sync.Mutex
	runs     map[string]int                    // package -> runs done
	failures map[string]map[string][]failedRun // package -> test -> its failed runs
}

type failedRun struct {
	run    int // 1-based
	output string
}

func newTally() *tally {
	return &tally{runs: map[string]int{}, failures: map[string]map[string][]failedRun{}}
}

func (t *tally) add(pkg string, r runResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.runs[pkg]++
	for test, output := range r.failed {
		if t.failures[pkg] == nil {
			t.failures[pkg] = map[string][]failedRun{}
		}
		t.failures[pkg][test] = append(t.failures[pkg][test], failedRun{run: t.runs[pkg], output: output})
	}
}

// failedCount is how many distinct tests failed at least once.
func (t *tally) failedCount() int {
	n := 0
	for _, tests := range t.failures {
		n += len(tests)
	}
	return n
}

// report writes every test that failed at least once, with the output of each failed run.
func (t *tally) report(w io.Writer) {
	pkgs := make([]string, 0, len(t.runs))
	for p := range t.runs {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	total := 0
	for _, p := range pkgs {
		total += t.runs[p]
	}
	if t.failedCount() == 0 {
		fmt.Fprintf(w, "no test failed: %d package(s), %d run(s) in all\n", len(pkgs), total)
		return
	}
	fmt.Fprintf(w, "%d test(s) failed at least once (%d package(s), %d run(s) in all):\n", t.failedCount(), len(pkgs), total)
	for _, p := range pkgs {
		tests := make([]string, 0, len(t.failures[p]))
		for name := range t.failures[p] {
			tests = append(tests, name)
		}
		sort.Strings(tests)
		for _, name := range tests {
			fmt.Fprintf(w, "  %s %s: failed %d of %d run(s)\n", p, name, len(t.failures[p][name]), t.runs[p])
		}
	}
	for _, p := range pkgs {
		tests := make([]string, 0, len(t.failures[p]))
		for name := range t.failures[p] {
			tests = append(tests, name)
		}
		sort.Strings(tests)
		for _, name := range tests {
			for _, f := range t.failures[p][name] {
				fmt.Fprintf(w, "\n=== %s %s, run %d of %d:\n", p, name, f.run, t.runs[p])
				fmt.Fprint(w, indent(f.output))
			}
		}
	}
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)\n"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ") + "\n"
}
