// Command lockbench measures lockcheck (issue 8) and writes results/BENCH.md: lock cycle rates
// next to the libraries and the physical ceiling, the harness's own overhead, the checker's
// throughput, time to the first violation of each known-unsafe scenario, the suite's wall time,
// and start-up. In-process figures come from Go's benchmark harness (`go test -bench`), which it
// runs and parses; whole-run figures it measures itself. Run it from the module root (`make
// bench`). It is also its own worker process (`lockbench worker`) for the runs it starts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/internal/proc"
	_ "github.com/lockcheck/lockcheck/providers/all" // where servers may run
	_ "github.com/lockcheck/lockcheck/services/all"  // the service kinds
	"github.com/lockcheck/lockcheck/workloads"
)

// config is how much to measure. The defaults fit `make bench` in under 15 minutes on 2 cores.
type config struct {
	out          string
	quick        bool
	skip         map[int]bool
	lockTime     string // -benchtime of the lock cycle benchmarks
	lockCount    int
	checkerCount int
	checkEvents  int           // events of figure 7's histories
	soakFor      time.Duration // figure 8's soak; 0: show the last one stored
	startCount   int
	overheadRuns int
	overheadFor  time.Duration
	seeds        int // random-schedule seeds for figure 4
	runs         int // runs of each deterministic unsafe scenario
	scenarioDir  string
	suitePkgs    string // packages of figure 5
	only         string // figure 4: only scenarios whose name contains this
	results      string // where scenario run folders go (removed at the end unless --keep)
	keep         bool
	huntCells    string // figure 9: design:fault pairs
	huntSeeds    int
	// Figure 11's slow parts: images built from scratch, the matrix subset run twice.
	verdictImages, verdictMatrix bool
}

func main() {
	workloads.RunIfWorkerCommand()
	code := run()
	_ = proc.KillAll() // nothing we started outlives us
	os.Exit(code)
}

func run() int {
	var c config
	var skip string
	flag.StringVar(&c.out, "out", "results/BENCH.md", "where to write the report")
	flag.BoolVar(&c.quick, "quick", false, "small counts, for trying the command out (figures are rough)")
	flag.StringVar(&skip, "skip", "", "comma-separated figure numbers (1-12) to leave out")
	flag.StringVar(&c.lockTime, "lock-benchtime", "200ms", "-benchtime of each lock cycle benchmark")
	flag.IntVar(&c.lockCount, "lock-count", 3, "-count of the lock cycle benchmarks")
	flag.IntVar(&c.checkerCount, "checker-count", 3, "-count of the checker benchmarks, and rounds of figure 7")
	flag.IntVar(&c.checkEvents, "check-events", 1_000_000, "events of the histories `lockcheck check` judges in figure 7")
	flag.DurationVar(&c.soakFor, "soak", 0, "figure 8: soak a random-mixed scenario this long (make soak: 30m); 0 shows the last soak stored")
	flag.IntVar(&c.startCount, "start-count", 5, "cluster start-ups measured")
	flag.IntVar(&c.overheadRuns, "overhead-runs", 3, "rounds of the harness overhead measurement")
	flag.DurationVar(&c.overheadFor, "overhead-for", 2*time.Second, "length of each harness overhead measurement")
	flag.IntVar(&c.seeds, "seeds", 20, "seeds of each random-schedule unsafe scenario")
	flag.IntVar(&c.runs, "runs", 1, "runs of each deterministic unsafe scenario")
	flag.StringVar(&c.scenarioDir, "scenarios", "scenarios", "the scenario library")
	flag.StringVar(&c.only, "only", "", "figure 4: only the scenarios whose name contains this")
	flag.StringVar(&c.suitePkgs, "suite", "./...", "packages whose tests figure 5 times (make test: ./...)")
	flag.StringVar(&c.results, "results", "", "folder for the scenario runs' folders (default: a temporary one, removed)")
	flag.BoolVar(&c.keep, "keep", false, "keep the scenario runs' folders")
	flag.StringVar(&c.huntCells, "hunt-cells", "set-nx-px:pause,zk:pause", "figure 9: design:fault pairs lockhunt compares (make hunt-bench: all eight)")
	flag.IntVar(&c.huntSeeds, "hunt-seeds", 5, "figure 9: seeds of each pair and mode")
	flag.BoolVar(&c.verdictImages, "verdict-images", true, "figure 11: build the docker provider's images from scratch (needs Docker and root)")
	flag.BoolVar(&c.verdictMatrix, "verdict-matrix", true, "figure 11: run a part of the matrix at --parallel 1 and 2")
	flag.Parse()
	c.skip = map[int]bool{}
	for _, s := range strings.Split(skip, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > len(titles) {
			fmt.Fprintf(os.Stderr, "lockbench: --skip: %q is not a figure number 1-%d\n", s, len(titles))
			return 2
		}
		c.skip[n] = true
	}
	if c.quick {
		c.lockTime, c.lockCount, c.checkerCount, c.startCount = "100ms", 1, 1, 1
		c.overheadRuns, c.overheadFor, c.seeds = 1, time.Second, 3
		c.skip[5] = true // the suite takes 8 minutes whatever the counts
		c.huntSeeds = 2
		c.verdictImages, c.verdictMatrix = false, false
	}
	if _, err := os.Stat("go.mod"); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench: run me from the module root (where go.mod is): it runs `go test -bench` on the packages")
		return 2
	}
	if c.results == "" {
		dir, err := os.MkdirTemp("", "lockbench-runs-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockbench:", err)
			return 2
		}
		// Servers that run as their own user (PostgreSQL as postgres) must pass through it.
		if err := os.Chmod(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "lockbench:", err)
			return 2
		}
		c.results = dir
		if !c.keep {
			defer os.RemoveAll(dir)
		}
	}

	rawDir = filepath.Join(filepath.Dir(c.out), "bench-raw")
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	began := time.Now()
	rep := newReport(c, began)
	figures := []struct {
		n   int
		run func(context.Context, config) (string, error)
	}{
		{1, lockCycles},
		{2, harnessOverhead},
		{3, checkerThroughput},
		{7, checkEndToEnd},
		{6, startUp},
		{8, soak},
		{10, mutantScore},
		{4, firstViolations},
		{5, suiteWallTime},
		{9, huntVersusRandom},
		{11, timeToVerdict},
		{12, cellCPU},
	}
	failed := false
	for _, f := range figures {
		if c.skip[f.n] {
			rep.set(f.n, fmt.Sprintf("## %d. %s\n\nLeft out of this run (`--skip` or `--quick`).\n", f.n, titles[f.n]), 0)
			continue
		}
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(os.Stderr, "lockbench: figure %d (%s)...\n", f.n, titles[f.n])
		t := time.Now()
		text, err := f.run(ctx, c)
		took := time.Since(t)
		if err != nil {
			failed = true
			text += fmt.Sprintf("\n**Failed:** %v\n", err)
			fmt.Fprintf(os.Stderr, "lockbench: figure %d: %v\n", f.n, err)
		}
		rep.set(f.n, text, took)
		fmt.Println(text)
		if err := rep.write(time.Since(began)); err != nil {
			fmt.Fprintln(os.Stderr, "lockbench:", err)
			return 2
		}
	}
	total := time.Since(began)
	if err := rep.write(total); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		return 2
	}
	fmt.Printf("lockbench: total %s; wrote %s\n", total.Round(time.Second), c.out)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "lockbench: interrupted")
		return 2
	case failed:
		return 1
	}
	return 0
}

var titles = map[int]string{
	1:  "Lock cycle rate",
	2:  "Harness overhead",
	3:  "Checker throughput",
	4:  "Time to first violation",
	5:  "Suite wall time",
	6:  "Start-up",
	7:  "`lockcheck check` end to end",
	8:  "Soak",
	9:  "Finding violations: random versus hunt",
	10: "Mutants caught",
	11: "Time to verdict",
	12: "CPU per matrix cell, by family",
}

// self is this executable, which runs workers with `worker`.
func self() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", errors.New("cannot find my own executable to start workers: " + err.Error())
	}
	return filepath.Abs(exe)
}
