// Package debate runs the debate scenarios (scenarios/debate/) and writes DEBATE.md: claim →
// scenario → observed verdict → which side it supports, with the command that reproduces each
// row and the repeatability each scenario was measured at.
package debate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/shard"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Options say how much to run.
type Options struct {
	Dir   string // the debate scenarios; default scenarios/debate
	Count int    // runs of each deterministic scenario (default 1)
	Seeds int    // seeds 1..Seeds for each scenario with a random schedule (default 1)
	Only  []string
	// Parallel is how many runs go side by side (default 1: one after another).
	Parallel int
	Runner   runner.Options
	OnRun    func(name string, i, n int, took time.Duration, r *runner.Result, err error)
}

// Row is one scenario's observed result.
type Row struct {
	Scenario string   `json:"scenario"`
	File     string   `json:"file"`
	Claims   []string `json:"claims"`
	Lock     string   `json:"lock"`
	Supports string   `json:"supports"`
	Finding  string   `json:"finding"`
	Random   bool     `json:"random"`   // a seeded random schedule: judged by its detection rate
	Runs     int      `json:"runs"`     // runs done
	Matched  int      `json:"matched"`  // runs whose verdict matched the scenario's expect block
	Detected int      `json:"detected"` // runs that showed a violation (double ownership or unfenced data lost)
	Errors   int      `json:"errors"`   // runs the harness could not complete
	// Sometimes is the outcome a scenario states a rate for (its `sometimes:` block), Rate that
	// rate and its accepted range, Shown the runs that showed it, RateOK whether Shown of Runs is
	// consistent with Rate.
	Sometimes string        `json:"sometimes,omitempty"`
	Rate      string        `json:"rate,omitempty"`
	Shown     int           `json:"shown,omitempty"`
	RateOK    bool          `json:"rate_ok,omitempty"`
	Observed  string        `json:"observed"` // the first run's verdict, in short
	Folder    string        `json:"run_folder"`
	Wall      time.Duration `json:"wall_ns"`
}

// Load reads the debate scenarios, in claim order.
func Load(o Options) ([]*scenarios.Scenario, error) {
	dir := o.Dir
	if dir == "" {
		dir = "scenarios/debate"
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no debate scenarios in %s", dir)
	}
	var out []*scenarios.Scenario
	var errs []error
	for _, f := range files {
		sc, err := scenarios.Load(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(o.Only) > 0 && !slices.Contains(o.Only, sc.Name) {
			continue
		}
		out = append(out, sc)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return claimOrder(out[i]) < claimOrder(out[j]) })
	return out, nil
}

// claimOrder sorts by the scenario's first claim: Kleppmann's (K), then antirez's (A), then the
// source articles' common mistakes (M), each by number, then by file name; scenarios without a
// claim come last.
func claimOrder(sc *scenarios.Scenario) string {
	key := "9"
	if len(sc.Claims) > 0 {
		c := sc.Claims[0]
		if i := strings.IndexAny("KAM", c[:min(len(c), 1)]); i >= 0 && len(c) > 1 {
			n, _ := strconv.Atoi(c[1:])
			key = fmt.Sprintf("%d%03d", i+1, n)
		}
	}
	return key + filepath.Base(sc.Path)
}

// ShardKey names a scenario for sharding: its file name, so its shard does not depend on which
// other scenarios the folder holds.
func ShardKey(file string) string { return filepath.Base(file) }

// Select keeps the scenarios of list that belong to s (all of them for the zero Shard), in order.
func Select(list []*scenarios.Scenario, s shard.Shard) []*scenarios.Scenario {
	var out []*scenarios.Scenario
	for _, sc := range list {
		if s.Has(ShardKey(sc.Path)) {
			out = append(out, sc)
		}
	}
	return out
}

// Random reports whether the scenario has a seeded random schedule.
func Random(sc *scenarios.Scenario) bool {
	for _, f := range sc.Nemesis {
		if f.Random != nil {
			return true
		}
	}
	return false
}

// Run runs every scenario (Count times, or over Seeds seeds when its schedule is random),
// Parallel runs at a time. Each run has its own servers, ports and folder, so runs side by side
// share only the machine; rows come back in the order of list whatever the order runs end in.
func Run(ctx context.Context, list []*scenarios.Scenario, o Options) ([]Row, error) {
	if o.Count < 1 {
		o.Count = 1
	}
	if o.Seeds < 1 {
		o.Seeds = 1
	}
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	rows := make([]Row, len(list))
	type job struct{ row, i, n int }
	var jobs []job
	for k, sc := range list {
		rows[k] = Row{Scenario: sc.Name, File: sc.Path, Claims: sc.Claims, Lock: sc.Lock, Supports: sc.Supports,
			Finding: sc.Finding, Random: Random(sc)}
		if st := sc.Sometimes; st != nil {
			rows[k].Sometimes, rows[k].Rate = st.What, st.Describe()
		}
		n := o.Count
		if rows[k].Random {
			n = o.Seeds
		}
		for i := 1; i <= n; i++ {
			jobs = append(jobs, job{k, i, n})
		}
	}
	var (
		mu          sync.Mutex
		next        int
		interrupted bool
		wg          sync.WaitGroup
	)
	for range min(o.Parallel, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == len(jobs) || interrupted || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				j := jobs[next]
				next++
				mu.Unlock()
				sc := list[j.row]
				run := *sc
				if rows[j.row].Random {
					run.Seed = int64(j.i)
				}
				started := time.Now()
				res, err := runner.Run(ctx, &run, o.Runner)
				took := time.Since(started)
				mu.Lock()
				if o.OnRun != nil {
					o.OnRun(sc.Name, j.i, j.n, took, res, err)
				}
				if errors.Is(err, runner.ErrInterrupted) {
					interrupted = true
				} else {
					rows[j.row].add(j.i, res, err, took)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if interrupted || ctx.Err() != nil {
		var done []Row
		for _, r := range rows {
			if r.Runs > 0 {
				done = append(done, r)
			}
		}
		return done, runner.ErrInterrupted
	}
	for k := range rows {
		if st := list[k].Sometimes; st != nil {
			rows[k].RateOK = st.Consistent(rows[k].Shown, rows[k].Runs-rows[k].Errors)
		}
	}
	return rows, nil
}

// add counts one finished run (the i-th) into the row.
func (row *Row) add(i int, res *runner.Result, err error, took time.Duration) {
	row.Runs++
	row.Wall += took
	if err != nil {
		row.Errors++
		return
	}
	if res.Matches {
		row.Matched++
	}
	if res.Shows != nil && *res.Shows {
		row.Shown++
	}
	if Violated(res.Verdict) {
		row.Detected++
	}
	if i == 1 || row.Observed == "" {
		row.Observed, row.Folder = Observed(res.Verdict), res.Dir
	}
}

// Passed reports whether a deterministic row did what its file says: every run matched its
// expect block and, for a scenario that states a rate, the runs that showed that outcome are
// consistent with it. A random-schedule row is judged by its seeds' detection rate, not here.
func (row Row) Passed() bool {
	return row.Errors == 0 && row.Matched == row.Runs && (row.Sometimes == "" || row.RateOK)
}

// Violated: the lock failed — two clients believed they held it at once, or the unfenced register
// (the lock's protection alone) lost data (checker.Judge).
func Violated(v checker.Verdict) bool { return checker.Judge(v).LockFailed }

// Observed is a verdict in one line (checker.Short).
func Observed(v checker.Verdict) string { return checker.Short(v) }
