// Command flakes hunts flaky tests: it runs each package's tests N times, one package at a time
// (so timing-sensitive tests against real servers do not compete with each other), and lists
// every test that failed at least once, with its output from each failed run.
//
//	flakes [-n 5] [-timeout 15m] [-run REGEXP] [-C DIR] [-p 1] [-load 0] [packages]
//
// -p P runs the packages P at a time instead, N rounds of them all, as make test runs its
// real-server packages (-p 2); -load L keeps L busy loops running beside them, so that a test
// that passes only on an idle machine fails here before it fails in someone's CI.
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
	"sync"
	"sync/atomic"
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
	parallel := fs.Int("p", 1, "packages run at once (rounds of them all, as go test -p runs them)")
	load := fs.Int("load", 0, "busy loops kept running beside the tests (each takes a core while it can)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flakes [-n N] [-timeout D] [-run REGEXP] [-C DIR] [-p P] [-load L] [packages] (default ./...)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *n < 1 || *parallel < 1 || *load < 0 {
		fmt.Fprintf(stderr, "flakes: -n %d, -p %d, -load %d: want at least 1, 1 and 0\n", *n, *parallel, *load)
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

	stopLoad := busyLoops(*load)
	defer stopLoad()
	t := newTally()
	once := func(pkg string, i int) error {
		started := time.Now()
		res, err := testOnce(*goCmd, *dir, pkg, *timeout, *runRE)
		if err != nil {
			return err
		}
		t.add(pkg, res)
		fmt.Fprintf(stderr, "%s run %d/%d: %s (%s)\n", pkg, i, *n, outcome(res), time.Since(started).Round(100*time.Millisecond))
		return nil
	}
	schedule := eachPackageInTurn
	if *parallel > 1 {
		schedule = func(pkgs []string, n int, once func(string, int) error) error {
			return roundsSideBySide(pkgs, n, *parallel, once)
		}
	}
	if err := schedule(pkgs, *n, once); err != nil {
		fmt.Fprintln(stderr, "flakes:", err)
		return 2
	}
	fmt.Fprintln(stdout)
	t.report(stdout)
	if t.failedCount() > 0 {
		return 1
	}
	return 0
}

// eachPackageInTurn runs each package n times before the next.
func eachPackageInTurn(pkgs []string, n int, once func(pkg string, i int) error) error {
	for _, pkg := range pkgs {
		for i := 1; i <= n; i++ {
			if err := once(pkg, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// roundsSideBySide runs n rounds of every package, p packages at a time, in go list's order
// within a round (go test -p p's way): a package meets the others it meets in make test.
func roundsSideBySide(pkgs []string, n, p int, once func(pkg string, i int) error) error {
	for i := 1; i <= n; i++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		slots := make(chan struct{}, p)
		for _, pkg := range pkgs {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				if err := once(pkg, i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// busyLoops starts k goroutines that spin until stopped: the load of a busy machine, beside
// the tests' own processes.
func busyLoops(k int) (stop func()) {
	var done atomic.Bool
	for range k {
		go func() {
			for n := 0; !done.Load(); n++ {
			}
		}()
	}
	return func() { done.Store(true) }
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
