// Package matrix runs a grid of lock designs × generic faults, one ordinary scenario run per
// cell, and tabulates what each cell shows: its outcome (checker.Outcomes), with the fencing
// registers that rescued it or the liveness it lost. It writes the grid as Markdown, JSON and a self-contained page.
package matrix

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/admission"
	"github.com/lockcheck/lockcheck/internal/rundir"
	"github.com/lockcheck/lockcheck/internal/shard"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
)

// KeptServersDir, under the results folder, holds the folders of the lock services a grid kept
// warm across runs (Options.Warm), one folder per grid: their servers' logs.
const KeptServersDir = "kept-servers"

// keptIdle is how long a kept service waits for its next run before it is stopped: the grid
// runs the cells of one layout one after another.
const keptIdle = 10 * time.Second

// Options choose the grid and how to run it.
type Options struct {
	Locks  []string // rows; empty: every registered design
	Faults []string // columns; empty: every fault in Faults
	Count  int      // runs per cell (default 1)
	Seed   int64    // scenario seed (default 1)
	// Shard, when set, runs only the cells of one part of the grid (see CellKey), for a CI job
	// matrix; Merge puts the parts back together.
	Shard shard.Shard
	// Parallel is how many runs go side by side (default 1: one after another). Each run has its
	// own servers, ports and folder, so runs side by side share only the machine. With Auto it is
	// a cap: a run starts while the machine has CPU to spare (internal/admission), and the
	// longest cells start first, so that the grid does not end waiting for one that started last.
	Parallel int
	Auto     bool
	// Warm keeps the lock service of a run no fault touched for the next run of the same layout
	// (services.Warm), in RESULTS/kept-servers/<time>/, unless Runner already has a keeper.
	Warm   bool
	Runner runner.Options
	// OnCell is told about each cell as soon as it is done (progress output).
	OnCell func(done, total int, c Cell)
}

// Matrix is a finished grid.
type Matrix struct {
	Started time.Time     `json:"started"`
	Wall    time.Duration `json:"wall_ns"`
	Locks   []string      `json:"locks"`
	Faults  []string      `json:"faults"`
	Cells   []Cell        `json:"cells"` // row by row
	// Interrupted is set when the run was cut short: cells not reached are absent.
	Interrupted bool `json:"interrupted,omitempty"`

	// How the grid was run: Merge refuses to combine shards that differ in these.
	Count      int    `json:"count,omitempty"`
	Parallel   int    `json:"parallel,omitempty"` // runs side by side (not a Merge condition); with Auto, the cap
	Auto       bool   `json:"parallel_auto,omitempty"`
	Peak       int    `json:"parallel_peak,omitempty"` // with Auto: the most runs that went side by side
	Seed       int64  `json:"seed,omitempty"`
	ResultsDir string `json:"results_dir,omitempty"` // the run folders' root, as given (see Merge)
	// Shard is set when only one part of the grid was run: the cells of the others are absent.
	Shard *shard.Shard `json:"shard,omitempty"`
	// Merged is the number of shards a merged matrix was made from; MissingShards lists those
	// that were not there (their cells are absent).
	Merged        int      `json:"merged_shards,omitempty"`
	MissingShards []string `json:"missing_shards,omitempty"`
	// With Options.Warm: the lock services started to be kept across runs, and the runs that got
	// a kept one.
	ServicesKept   int `json:"services_kept,omitempty"`
	ServicesReused int `json:"services_reused,omitempty"`

	// Baseline says what the cells were gated against (lockcheck matrix --baseline,
	// --baseline-lock), and Regressions the cells that got worse than it (compare.go).
	Baseline    string       `json:"baseline,omitempty"`
	Regressions []Regression `json:"regressions,omitempty"`
}

// CellKey names a cell for sharding: its shard depends on this and nothing else.
func CellKey(lock, fault string) string { return lock + " × " + fault }

// Cell returns the cell for (lock, fault), if it was run.
func (m *Matrix) Cell(lock, fault string) (Cell, bool) {
	for _, c := range m.Cells {
		if c.Lock == lock && c.Fault == fault {
			return c, true
		}
	}
	return Cell{}, false
}

// Validate checks the names in o before anything starts; errors list the valid names.
func (o Options) Validate() error {
	var errs []error
	for _, l := range o.Locks {
		if _, err := locks.Get(l); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range o.Faults {
		if _, err := faultNamed(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run runs every cell, Parallel runs at a time (the runs of a cell are separate jobs, so a
// cell's --count runs may go side by side too); cells come back in grid order, row by row,
// whatever order they end in. A harness failure in one cell marks that cell Error and goes on.
func Run(ctx context.Context, o Options) (*Matrix, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(o.Locks) == 0 {
		o.Locks = DefaultLocks()
	}
	started := time.Now() // the wall time counts the builds of libraries at a version too
	if err := prepare(o.Locks); err != nil {
		return nil, err
	}
	if len(o.Faults) == 0 {
		o.Faults = FaultNames()
	}
	if o.Count < 1 {
		o.Count = 1
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	// Rows are named by their designs, as their cells are: a design file at a version,
	// mine.yaml@v1.2.0, is the row mine@v1.2.0.
	rows := make([]string, len(o.Locks))
	for i, l := range o.Locks {
		d, _ := locks.Get(l)
		rows[i] = d.Name
	}
	m := &Matrix{Started: started, Locks: rows, Faults: o.Faults, Count: o.Count, Parallel: o.Parallel, Auto: o.Auto,
		Seed: o.Seed, ResultsDir: o.Runner.ResultsDir}
	if m.ResultsDir == "" {
		m.ResultsDir = "results" // the runner's default
	}
	if o.Shard.Enabled() {
		s := o.Shard
		m.Shard = &s
	}
	// Every cell of this shard, in grid order; n/a cells and cells whose scenario cannot be made
	// are decided at once, the others become Count jobs each.
	var cells []*pending
	type job struct {
		cell *pending
		i    int
	}
	var jobs []job
	for _, lock := range o.Locks {
		d, _ := locks.Get(lock)
		for _, fault := range o.Faults {
			if !o.Shard.Has(CellKey(lock, fault)) {
				continue
			}
			f, _ := faultNamed(fault)
			p := newPending(d, f, o)
			cells = append(cells, p)
			for i := range p.left {
				jobs = append(jobs, job{p, i})
			}
		}
	}
	var (
		mu   sync.Mutex
		next int
		done int
		wg   sync.WaitGroup
	)
	finish := func(p *pending) { // under mu
		p.finish()
		done++
		if o.OnCell != nil {
			o.OnCell(done, len(cells), p.cell)
		}
	}
	for _, p := range cells {
		if p.left == 0 {
			finish(p)
		}
	}
	if o.Warm && o.Runner.Warm == nil {
		dir, err := rundir.New(filepath.Join(m.ResultsDir, KeptServersDir), started)
		if err == nil {
			dir, err = filepath.Abs(dir) // a server runs in its own folder, not ours
		}
		if err != nil {
			return nil, fmt.Errorf("create the kept servers' folder: %w", err)
		}
		warm := services.NewWarm(dir, keptIdle, o.Runner.Logger)
		o.Runner.Warm = warm
		defer func() {
			if err := warm.Close(); err != nil && o.Runner.Logger != nil {
				o.Runner.Logger.Warn("stop the servers kept warm", "err", err)
			}
			m.ServicesKept, m.ServicesReused = warm.Counts()
		}()
	}
	// Cells on the same servers go one after another, so that a service kept warm is taken
	// before it idles out (the rows of one service are apart in the grid: redisson is far from
	// set-nx-px).
	first := map[string]int{}
	for _, j := range jobs {
		if _, ok := first[j.cell.layout()]; !ok {
			first[j.cell.layout()] = len(first)
		}
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(first[a.cell.layout()], first[b.cell.layout()]) })
	var gate *admission.Gate
	if o.Auto {
		gate = admission.New(o.Parallel)
		defer gate.Close()
		slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(b.cell.length(), a.cell.length()) })
		jobs = spread(jobs, func(j job) string { return j.cell.family() }, func(j job) time.Duration { return j.cell.length() })
	}
	for range min(o.Parallel, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var admitted admission.Job
				if gate != nil {
					var err error
					if admitted, err = gate.Wait(ctx); err != nil {
						return
					}
				}
				mu.Lock()
				if next == len(jobs) || ctx.Err() != nil {
					mu.Unlock()
					admitted.Done()
					return
				}
				j := jobs[next]
				next++
				mu.Unlock()
				started := time.Now()
				ro := o
				if gate != nil {
					ro.Runner.OnEvent = readyAtStart(admitted, o.Runner.OnEvent)
				}
				out, interrupted := runOnce(ctx, j.cell, ro)
				took := time.Since(started)
				admitted.Done()
				mu.Lock()
				if !interrupted {
					j.cell.outcomes[j.i], j.cell.ran[j.i] = out, true
					j.cell.wall += took
					if j.cell.left--; j.cell.left == 0 {
						finish(j.cell)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if gate != nil {
		m.Peak = gate.Peak()
	}
	// An interrupted grid keeps the cells with every run done, and a cell cut short with the
	// runs it finished; cells not reached are absent.
	m.Interrupted = done < len(cells)
	for _, p := range cells {
		switch {
		case p.done:
			m.Cells = append(m.Cells, p.cell)
		case p.started() > 0:
			p.finish()
			m.Cells = append(m.Cells, p.cell)
		}
	}
	m.Wall = time.Since(m.Started)
	return m, nil
}

// pending is a cell while its runs are under way.
type pending struct {
	design   locks.Design
	sc       *scenarios.Scenario
	cell     Cell
	outcomes []Outcome // by run, filled as runs end
	ran      []bool
	left     int // runs not finished
	wall     time.Duration
	done     bool
}

// newPending makes a cell's scenario; a cell that needs no run (n/a, or a scenario the grid
// cannot make: a bug in the grid, not in the lock, shown in the cell) has no runs left.
func newPending(d locks.Design, f Fault, o Options) *pending {
	p := &pending{design: d, cell: Cell{Lock: d.Name, Fault: f.Name}}
	sc, na, err := cellScenario(d, f, o.Seed)
	switch {
	case na != "":
		p.cell.Status, p.cell.Detail = NA, na
	case err != nil:
		p.outcomes, p.ran = []Outcome{{Status: Error, Err: err.Error()}}, []bool{true}
	default:
		p.sc, p.left = sc, o.Count
		p.outcomes, p.ran = make([]Outcome, o.Count), make([]bool, o.Count)
	}
	return p
}

// length is how long the cell's scenario runs (0 for a cell that needs no run).
func (p *pending) length() time.Duration {
	if p.sc == nil {
		return 0
	}
	return p.sc.Duration.Resolve(p.sc.TTL.D()).D()
}

// family is the kind of the cell's lock service, and "external" where its clients are a program
// of their own: runs of one family cost the machine alike (spread).
func (p *pending) family() string {
	if p.sc == nil {
		return ""
	}
	if p.design.External {
		return p.sc.Plan().Kind + " external"
	}
	return p.sc.Plan().Kind
}

// layout names the servers the cell's scenario runs on (services.Plan.Layout).
func (p *pending) layout() string {
	if p.sc == nil {
		return ""
	}
	return p.sc.Plan().Layout()
}

func (p *pending) started() int {
	n := 0
	for _, r := range p.ran {
		if r {
			n++
		}
	}
	return n
}

// finish summarises the runs that ended, in run order.
func (p *pending) finish() {
	if p.done {
		return
	}
	p.done = true
	if p.cell.Status == NA {
		return
	}
	for i, r := range p.ran {
		if r {
			p.cell.Outcomes = append(p.cell.Outcomes, p.outcomes[i])
		}
	}
	p.cell.Wall = p.wall
	p.cell.summarise()
}

// readyAtStart tells the gate a run's start-up is over when its clock starts (the start note,
// written once its servers and clients are up), and passes every event on to next.
func readyAtStart(j admission.Job, next func(history.Event)) func(history.Event) {
	return func(e history.Event) {
		if e.Process == history.Controller && e.F == history.Start {
			j.Ready()
		}
		if next != nil {
			next(e)
		}
	}
}

// runOnce runs one of a cell's runs; interrupted says the run was cut short and counts for nothing.
func runOnce(ctx context.Context, p *pending, o Options) (Outcome, bool) {
	res, err := runner.Run(ctx, p.sc, o.Runner)
	var out Outcome
	switch {
	case errors.Is(err, runner.ErrInterrupted) || (err != nil && ctx.Err() != nil):
		return Outcome{}, true
	case err != nil:
		out = Outcome{Status: Error, Err: err.Error()}
	default:
		out = Classify(res.Verdict, p.design.HasToken())
	}
	if res != nil {
		out.Dir = res.Dir
	}
	return out, false
}

// prepare readies every row's design on this machine (a library at a version is built) before
// the first cell starts its servers: a version that cannot be had stops the grid at once.
func prepare(names []string) error {
	for _, name := range names {
		if d, err := locks.Get(name); err == nil && d.Prepare != nil {
			if err := d.Prepare(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Gate lists the cells that do not meet require (see Cell.Meets).
func (m *Matrix) Gate(require Status) []Cell {
	var bad []Cell
	for _, c := range m.Cells {
		if !c.Meets(require) {
			bad = append(bad, c)
		}
	}
	return bad
}

// Describe is a one-line account of a cell for logs.
func Describe(c Cell) string {
	return fmt.Sprintf("%-16s %-20s %-28s %s", c.Lock, c.Fault, c.Label(), c.Detail)
}

// DefaultLocks are the designs a matrix runs when it is not told which: every registered design
// but the variants that exist only to reproduce a published bug (locks.Design.VariantOf).
func DefaultLocks() []string {
	var out []string
	for _, d := range locks.All() {
		if d.VariantOf == "" {
			out = append(out, d.Name)
		}
	}
	return out
}
