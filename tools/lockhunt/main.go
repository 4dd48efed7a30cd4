// Command lockhunt measures how well the nemesis finds a lock's violations (issue 18): for each
// lock design × fault family, over seeds 1..N, it runs the same workload under a random package
// (Jepsen's style: any client, any moment) and under a hunt package (faults aimed at the holder,
// a waiter, the overtaken, at the moments they can matter), each for at most --within, and
// writes a table: how many seeds found a double ownership, and the median time to the first one
// (from the history: the earliest double-ownership window's offset from the run's start). A run
// stops shortly after the history first shows two holders (runner.Options.StopAfterOverlap).
// `make hunt-bench`. It is also its own worker process (`lockhunt worker`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/hunt"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/locks"
	_ "github.com/lockcheck/lockcheck/providers/all" // where servers may run
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
	_ "github.com/lockcheck/lockcheck/services/all" // the service kinds
	"github.com/lockcheck/lockcheck/workloads"
)

func main() {
	workloads.RunIfWorkerCommand()
	code := run()
	_ = proc.KillAll() // nothing we started outlives us
	os.Exit(code)
}

// config is what to measure.
type config struct {
	cells        []pair // design × fault family
	modes        []string
	seeds        int
	within       time.Duration
	out, results string
	keep         bool
}

func run() int {
	var c config
	var cells, designs, faults, modes string
	flag.StringVar(&cells, "cells", defaultCells, "design:fault pairs to measure, comma-separated (ignored when --designs is given)")
	flag.StringVar(&designs, "designs", "", "lock designs, comma-separated: measure each under each of --faults")
	flag.StringVar(&faults, "faults", "pause", "fault families for --designs, comma-separated: any kind a random package draws for clients")
	flag.StringVar(&modes, "modes", "random,hunt", "nemesis modes compared")
	flag.IntVar(&c.seeds, "seeds", 20, "seeds 1..N per design, fault and mode")
	flag.DurationVar(&c.within, "within", 30*time.Second, "each run's length: the time a violation must be found within")
	flag.StringVar(&c.out, "out", "results/HUNT.md", "where to write the table")
	flag.StringVar(&c.results, "results", "", "folder for the run folders (default: a temporary one, removed)")
	flag.BoolVar(&c.keep, "keep", false, "keep the run folders")
	flag.Parse()
	c.modes = split(modes)
	var err error
	if c.cells, err = parseCells(cells, designs, faults); err != nil {
		fmt.Fprintln(os.Stderr, "lockhunt:", err)
		return 2
	}
	if err := c.check(); err != nil {
		fmt.Fprintln(os.Stderr, "lockhunt:", err)
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if c.results == "" {
		dir, err := os.MkdirTemp("", "lockhunt-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockhunt:", err)
			return 2
		}
		c.results = dir
		if !c.keep {
			defer os.RemoveAll(dir)
		}
	}
	table, err := measure(ctx, c)
	if table != "" {
		if werr := writeFile(c.out, table); werr != nil {
			fmt.Fprintln(os.Stderr, "lockhunt:", werr)
			return 2
		}
		fmt.Print(table)
		fmt.Fprintln(os.Stderr, "lockhunt: wrote", c.out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockhunt:", err)
		return 2
	}
	return 0
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// pair is one cell of the table: a design under a fault family.
type pair struct{ design, fault string }

// defaultCells are the designs the pause family breaks (K2, K3: a holder frozen past its lease or
// session), and getset under client clock steps (M2). A cut or a delay of a client's links to the
// lock nodes does not lengthen a hold, so with short holds those families are not unsafe here.
const defaultCells = "set-nx-px:pause,redlock:pause,redisson:pause,zk:pause,zk-session-aware:pause,etcd-unchecked:pause,etcd:pause,getset:clock"

func parseCells(cells, designs, faults string) ([]pair, error) {
	var out []pair
	if designs != "" {
		for _, d := range split(designs) {
			for _, f := range split(faults) {
				out = append(out, pair{d, f})
			}
		}
		return out, nil
	}
	for _, c := range split(cells) {
		d, f, ok := strings.Cut(c, ":")
		if !ok || d == "" || f == "" {
			return nil, fmt.Errorf("--cells: %q is not design:fault (e.g. set-nx-px:pause)", c)
		}
		out = append(out, pair{d, f})
	}
	return out, nil
}

func (c config) check() error {
	if len(c.cells) == 0 {
		return errors.New("no cells to measure")
	}
	for _, p := range c.cells {
		design, err := locks.Get(p.design)
		if err != nil {
			return fmt.Errorf("--cells: %w", err)
		}
		if !design.Expires {
			return fmt.Errorf("--cells: %s has no ttl to size faults by", p.design)
		}
	}
	for _, m := range c.modes {
		if m != "random" && m != "hunt" {
			return fmt.Errorf("--modes: unknown mode %q; valid modes: random, hunt", m)
		}
	}
	if c.seeds < 1 || c.within <= 0 {
		return errors.New("--seeds and --within must be positive")
	}
	return nil
}

// cellScenario is the scenario of one design × fault × mode (package hunt builds it).
func cellScenario(design, fault, mode string, seed int64, within time.Duration) (*scenarios.Scenario, error) {
	return hunt.Scenario(hunt.Spec{Lock: design, Faults: []string{fault}, Mode: mode, Seed: seed, Within: within})
}

// cell is one design × fault × mode over the seeds.
type cell struct {
	runs   int
	firsts []time.Duration // per seed that found one
	errs   []string
	wall   time.Duration
}

func measure(ctx context.Context, c config) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	cells := map[string]*cell{}
	start := time.Now()
	for _, p := range c.cells {
		design, fault := p.design, p.fault
		for _, mode := range c.modes {
			cl := &cell{}
			cells[design+" "+fault+" "+mode] = cl
			t0 := time.Now()
			for seed := int64(1); seed <= int64(c.seeds) && ctx.Err() == nil; seed++ {
				first, found, err := runOnce(ctx, c, exe, design, fault, mode, seed)
				switch {
				case err != nil:
					cl.errs = append(cl.errs, err.Error())
				case found:
					cl.runs++
					cl.firsts = append(cl.firsts, first)
				default:
					cl.runs++
				}
				fmt.Fprintf(os.Stderr, "lockhunt: %s × %s, %s, seed %d: found %d of %d\n", design, fault, mode, seed, len(cl.firsts), cl.runs)
			}
			cl.wall = time.Since(t0)
			// The table so far, so a long measurement cut short still leaves its figures.
			_ = writeFile(c.out, report(c, cells, time.Since(start)))
		}
	}
	return report(c, cells, time.Since(start)), ctx.Err()
}

// runOnce runs one seed and returns the first double ownership's offset, if there was one.
func runOnce(ctx context.Context, c config, exe, design, fault, mode string, seed int64) (time.Duration, bool, error) {
	sc, err := cellScenario(design, fault, mode, seed, c.within)
	if err != nil {
		return 0, false, err
	}
	res, err := runner.Run(ctx, sc, runner.Options{ResultsDir: c.results, Worker: []string{exe, "worker"},
		StopAfterOverlap: 300 * time.Millisecond})
	if err != nil {
		return 0, false, err
	}
	if !c.keep {
		_ = os.RemoveAll(res.Dir)
	}
	first, found := hunt.FirstViolation(res.Verdict, hunt.FindAny)
	return first, found, nil
}

func report(c config, cells map[string]*cell, wall time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Finding violations: random versus hunt\n\n")
	fmt.Fprintf(&b, "Command: `lockhunt --cells %s --modes %s --seeds %d --within %s` (`make hunt-bench`). "+
		"Each cell runs seeds 1..%d, each run at most %s: four clients (50 ms holds, 10 ms think), a lease of 400 ms or the "+
		"service's shortest, and one random package of that fault kind. *random*: any client, every 1.5 TTLs on average, "+
		"for 0.5–2.5 TTLs. *hunt*: `mode: hunt` with its defaults (every 2 TTLs on average, 1.2–3 TTLs, aimed at the "+
		"holder, a waiter or the overtaken, now or at a program point). *found*: seeds whose history shows two clients "+
		"holding at once; *first*: median (min–max) offset of the earliest double-ownership window over those seeds. "+
		"A run stops 300 ms after the history first shows two holders. Wall time %s.\n\n",
		c.cellList(), strings.Join(c.modes, ","), c.seeds, c.within,
		c.seeds, c.within, wall.Round(time.Second))
	b.WriteString("| design | fault |")
	for _, m := range c.modes {
		fmt.Fprintf(&b, " %s: found | %s: first |", m, m)
	}
	b.WriteString("\n| --- | --- |" + strings.Repeat(" --- | --- |", len(c.modes)) + "\n")
	var errs []string
	for _, p := range c.cells {
		design, fault := p.design, p.fault
		fmt.Fprintf(&b, "| `%s` | %s |", design, fault)
		for _, m := range c.modes {
			cl := cells[design+" "+fault+" "+m]
			if cl == nil {
				b.WriteString(" – | – |")
				continue
			}
			fmt.Fprintf(&b, " %d of %d | %s |", len(cl.firsts), cl.runs, spread(cl.firsts))
			for _, e := range cl.errs {
				errs = append(errs, fmt.Sprintf("%s × %s, %s: %s", design, fault, m, firstLine(e)))
			}
		}
		b.WriteString("\n")
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		b.WriteString("\nRuns that failed (not counted):\n\n")
		for _, e := range slices.Compact(errs) {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	return b.String()
}

func (c config) cellList() string {
	var out []string
	for _, p := range c.cells {
		out = append(out, p.design+":"+p.fault)
	}
	return strings.Join(out, ",")
}

// spread writes "median (min–max)" of the durations, to 10 ms.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	if len(s) == 1 {
		return r(med)
	}
	return fmt.Sprintf("%s (%s–%s)", r(med), r(s[0]), r(s[len(s)-1]))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func writeFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
