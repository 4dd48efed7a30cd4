// Command flakes hunts flaky tests: it runs each package's tests N times, one package at a time
// (so timing-sensitive tests against real servers do not compete with each other), and lists
// every test that failed at least once, with its output from each failed run.
//
//	flakes [-n 5] [-timeout 15m] [-run REGEXP] [-C DIR] [packages]
//
// Exit status: 0 when nothing failed, 1 when some test failed at least once, 2 when the tool
// itself could not run (bad flags, packages that do not exist).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flakes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 5, "runs of each package's tests")
	timeout := fs.Duration("timeout", 15*time.Minute, "go test -timeout for one run of one package")
	runRE := fs.String("run", "", "go test -run: only tests matching this regular expression")
	goCmd := fs.String("go", envOr("GO", "go"), "the go command")
	dir := fs.String("C", "", "run in this directory (default: the current one)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flakes [-n N] [-timeout D] [-run REGEXP] [-C DIR] [packages] (default ./...)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *n < 1 {
		fmt.Fprintf(stderr, "flakes: -n %d: want at least 1\n", *n)
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	pkgs, err := listPackages(*goCmd, *dir, patterns)
	if err != nil {
		fmt.Fprintln(stderr, "flakes:", err)
		return 2
	}

	t := newTally()
	for _, pkg := range pkgs {
		for i := 1; i <= *n; i++ {
			started := time.Now()
			res, err := testOnce(*goCmd, *dir, pkg, *timeout, *runRE)
			if err != nil {
				fmt.Fprintln(stderr, "flakes:", err)
				return 2
			}
			t.add(pkg, res)
			fmt.Fprintf(stderr, "%s run %d/%d: %s (%s)\n", pkg, i, *n, outcome(res), time.Since(started).Round(100*time.Millisecond))
		}
	}
	fmt.Fprintln(stdout)
	t.report(stdout)
	if t.failedCount() > 0 {
		return 1
	}
	return 0
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// listPackages expands patterns to import paths, in go list's order.
func listPackages(goCmd, dir string, patterns []string) ([]string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(goCmd, append([]string{"list"}, patterns...)...)
	cmd.Dir = dir
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(patterns, " "), err, stderr.String())
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list %s: no packages", strings.Join(patterns, " "))
	}
	return pkgs, nil
}

// testOnce runs one package's tests once, uncached. An error means go test could not be run at
// all; test and build failures are in the result.
func testOnce(goCmd, dir, pkg string, timeout time.Duration, runRE string) (runResult, error) {
	args := []string{"test", "-json", "-count=1", "-timeout", timeout.String()}
	if runRE != "" {
		args = append(args, "-run", runRE)
	}
	cmd := exec.Command(goCmd, append(args, pkg)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return runResult{}, fmt.Errorf("go test %s: %w", pkg, err)
	}
	if err != nil && stderr.Len() > 0 {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	// The go command's own messages (e.g. "no Go files") come on stderr; keep them with the run.
	return parseRun(io.MultiReader(&stdout, &stderr), err)
}

func outcome(r runResult) string {
	if len(r.failed) == 0 {
		return fmt.Sprintf("ok, %d test(s) passed", len(r.passed))
	}
	names := make([]string, 0, len(r.failed))
	for name := range r.failed {
		names = append(names, name)
	}
	sort.Strings(names)
	return "FAIL " + strings.Join(names, ", ")
}
