// Package matrix runs a grid of lock designs × generic faults, one ordinary scenario run per
// cell, and tabulates what each cell shows: safe, unsafe, rescued by fencing (and by which
// register), liveness lost. It writes the grid as Markdown, JSON and a self-contained page.
package matrix

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/internal/shard"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/runner"
)

// Options choose the grid and how to run it.
type Options struct {
	Locks  []string // rows; empty: every registered design
	Faults []string // columns; empty: every fault in Faults
	Count  int      // runs per cell (default 1)
	Seed   int64    // scenario seed (default 1)
	// Shard, when set, runs only the cells of one part of the grid (see CellKey), for a CI job
	// matrix; Merge puts the parts back together.
	Shard  shard.Shard
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
	Seed       int64  `json:"seed,omitempty"`
	ResultsDir string `json:"results_dir,omitempty"` // the run folders' root, as given (see Merge)
	// Shard is set when only one part of the grid was run: the cells of the others are absent.
	Shard *shard.Shard `json:"shard,omitempty"`
	// Merged is the number of shards a merged matrix was made from; MissingShards lists those
	// that were not there (their cells are absent).
	Merged        int      `json:"merged_shards,omitempty"`
	MissingShards []string `json:"missing_shards,omitempty"`

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

// Run runs every cell, one after another (cells run side by side would disturb each other's
// timing on a small machine). A harness failure in one cell marks that cell Error and goes on.
func Run(ctx context.Context, o Options) (*Matrix, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(o.Locks) == 0 {
		o.Locks = DefaultLocks()
	}
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
	m := &Matrix{Started: time.Now(), Locks: o.Locks, Faults: o.Faults, Count: o.Count, Seed: o.Seed, ResultsDir: o.Runner.ResultsDir}
	if m.ResultsDir == "" {
		m.ResultsDir = "results" // the runner's default
	}
	if o.Shard.Enabled() {
		s := o.Shard
		m.Shard = &s
	}
	total := 0
	for _, lock := range o.Locks {
		for _, fault := range o.Faults {
			if o.Shard.Has(CellKey(lock, fault)) {
				total++
			}
		}
	}
	for _, lock := range o.Locks {
		d, _ := locks.Get(lock)
		for _, fault := range o.Faults {
			if !o.Shard.Has(CellKey(lock, fault)) {
				continue
			}
			if ctx.Err() != nil {
				m.Interrupted = true
				m.Wall = time.Since(m.Started)
				return m, nil
			}
			f, _ := faultNamed(fault)
			c := runCell(ctx, d, f, o)
			m.Cells = append(m.Cells, c)
			if o.OnCell != nil {
				o.OnCell(len(m.Cells), total, c)
			}
		}
	}
	m.Wall = time.Since(m.Started)
	return m, nil
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

func runCell(ctx context.Context, d locks.Design, f Fault, o Options) Cell {
	c := Cell{Lock: d.Name, Fault: f.Name}
	sc, na, err := cellScenario(d, f, o.Seed)
	if na != "" {
		c.Status, c.Detail = NA, na
		return c
	}
	if err != nil { // a bug in the grid, not in the lock: show it in the cell
		c.Outcomes = []Outcome{{Status: Error, Err: err.Error()}}
		c.summarise()
		return c
	}
	started := time.Now()
	for i := 0; i < o.Count && ctx.Err() == nil; i++ {
		res, err := runner.Run(ctx, sc, o.Runner)
		var out Outcome
		switch {
		case err != nil && !errors.Is(err, runner.ErrInterrupted):
			out = Outcome{Status: Error, Err: err.Error()}
		default:
			out = Classify(res.Verdict, d.HasToken())
		}
		if res != nil {
			out.Dir = res.Dir
		}
		c.Outcomes = append(c.Outcomes, out)
	}
	c.Wall = time.Since(started)
	c.summarise()
	return c
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
