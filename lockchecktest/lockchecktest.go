// Package lockchecktest checks a Go project's own lock in the project's own test suite: register
// the design (its constructor, fencing token, expiry), pick a scenario (a scenario file, or one
// of lockcheck's generic faults by name), and run it against real servers — Redis, ZooKeeper, etcd,
// MariaDB or PostgreSQL started as local processes on free ports (or in Docker containers: import
// lockchecktest/docker), every client a separate process, real pauses — to get the verdict as a
// value, and as a test error when it is not the one expected.
//
// The test binary serves as its own worker process, so the design must be registered in every
// process: from an init function (or in TestMain before Main), and TestMain must call Main:
//
//	func init() { lockchecktest.Register(lockchecktest.Design{Name: "my-lock", New: newMyLock, Expires: true}) }
//	func TestMain(m *testing.M) { lockchecktest.Main(m) }
//
//	func TestMyLockUnderAGCPause(t *testing.T) {
//		lockchecktest.Run(t, lockchecktest.Check{Lock: "my-lock", Scenario: "pause-after-acquire", Expect: lockchecktest.Safe})
//	}
//
// The machine needs what lockcheck's runs need (redis-server, and the server of the design's
// service: scripts/install-deps.sh in lockcheck's repository installs them).
package lockchecktest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/workloads"
)

// What a design implements, and the errors it returns (see package locks).
type (
	// Lock is one client's handle on the lock: Acquire (one attempt), Release, Close.
	Lock = locks.Lock
	// Env is what a design gets to build a client: its name, the lock service's addresses as
	// this client reaches them (through its own proxies), the key, TTL, a command timeout, the
	// client's own clock (read time through Env.Now), and Point to mark program points.
	Env = locks.Env
	// Expiring is implemented by a lock whose holder knows when its hold ends: the client checks
	// it before using the lock.
	Expiring = locks.Expiring
	// Promise is what the lock promises a holder, and for how long (Design.Promise): the checker
	// tells a lock that promised itself to two clients at once (a broken promise: a bug) from a
	// holder that acted after its promise ran out (a paused or cut-off holder: the limit of every
	// lease).
	Promise = locks.Promise
	// Renewal is a renewal the lock made on its own (a heartbeat, a watchdog, a keep-alive): report
	// each with Env.Renewed, so that the history holds every promise.
	Renewal = locks.Renewal
	// Promising is implemented by a lock that knows when the request behind its last yes was
	// sent, and which lease or session its hold lives on.
	Promising = locks.Promising
)

var (
	// ErrBusy: Acquire certainly did not take the lock (another client holds it).
	ErrBusy = locks.ErrBusy
	// ErrNotHeld: Release found the lock no longer this client's.
	ErrNotHeld = locks.ErrNotHeld
)

// Services a design may run on.
const (
	Redis      = locks.Redis
	ZooKeeper  = locks.ZooKeeper
	Etcd       = locks.Etcd
	MariaDB    = locks.MariaDB
	PostgreSQL = locks.PostgreSQL
)

// Outcome is a verdict in one word.
type Outcome = checker.Outcome

// The outcomes (checker.Judge), best first: Safe (mutual exclusion held, nothing lost), Damaged
// (safe, but rightful users were harmed: failed releases, refused by fencing, tokens out of
// order, a first-come-first-served design's unfair overtakes), Starved (safe, but a client asked
// in vain while others were served, or askers were refused most of the run), Rescued (the lock
// failed under a fault but fencing kept the data right), Stuck (safe, but the lock stayed held by
// a dead client), Inconclusive (nobody ever held the lock), Unsafe (two clients held it at once,
// a holder having outlived its promise, or a fault on the servers explaining it), Broken (the lock
// promised itself to two clients at once, and no fault on its servers explains it).
const (
	Safe         = checker.Safe
	Damaged      = checker.Damaged
	Starved      = checker.Starved
	Rescued      = checker.Rescued
	Unsafe       = checker.Unsafe
	Stuck        = checker.Stuck
	Inconclusive = checker.Inconclusive
	Broken       = checker.Broken
)

// Design is a lock design from outside lockcheck.
type Design struct {
	Name string
	// Version is the release of the lock it is (v1.4.0, a commit): reports and run folders name
	// the design Name@Version, so two releases' runs say which is which. A check names it by Name
	// (or Name@Version); register two releases under one Name to check both in one test binary,
	// and name each with its version.
	Version string
	Service string // Redis (default), ZooKeeper, Etcd, MariaDB or PostgreSQL
	Nodes   int    // lock-service nodes it uses (default 1)
	// Token says what fencing token Acquire returns ("" or "none": it returns none); with one,
	// the fenced registers check it.
	Token string
	// Expires: the lock is a lease (or a session) that ends by itself after the scenario's TTL.
	Expires bool
	// Renews: a hold lasts while the holder's lock renews it (a heartbeat, a watchdog), not one
	// TTL; report each renewal with Env.Renewed.
	Renews bool
	// Promise says what the lock promises and for how long; the zero value is the TTL from each
	// acquisition and renewal (until released, for a lock that does not expire).
	Promise Promise
	// Usage lists the usage steps the lock offers beyond those every design does (try,
	// release-retry, and abandon: Acquire's context ends when a scenario gives the attempt up):
	// "reenter" when the holder may take it again. Env.Point marks points a scenario can aim a
	// step or a fault at.
	Usage []string
	// Points are the program points its code passes with Env.Point.
	Points []string
	New    func(Env) (Lock, error)
}

// Usage steps a design can list (Design.Usage).
const Reenter = locks.UsageReenter

// Register makes d available to Check.Lock and to scenario files' `lock:`. Call it in every
// process of the test binary (an init function); it panics on a repeated name or a missing
// constructor.
func Register(d Design) {
	if d.Nodes == 0 {
		d.Nodes = 1
	}
	name := d.Name
	if d.Version != "" {
		name += "@" + d.Version
	}
	locks.Register(locks.Design{
		Name: name, Summary: "a design registered by a test through lockchecktest", Source: "the project under test",
		Token: d.Token, Nodes: d.Nodes, Expires: d.Expires, Renews: d.Renews, Promise: d.Promise, Service: d.Service, New: d.New,
		Usage: d.Usage, Points: d.Points, FailureModes: []string{"what the checks show"}, Outside: true,
	})
}

// Main runs the tests, or, when the test binary was started as one of a check's clients, that
// client. Call it from TestMain.
func Main(m *testing.M) {
	workloads.RunIfTestWorker()
	os.Exit(m.Run())
}

// Faults are the built-in scenarios' names: lockcheck's generic faults, each scaled to the
// design's lease. "pause-after-acquire" is Kleppmann's K2 (a GC pause longer than the lease
// right after acquiring), "pause-before-write" K3 (the pause between check and write), "none"
// the control.
func Faults() []string { return matrix.FaultNames() }

// Check is one check of a lock.
type Check struct {
	// Lock is the registered design's name. A scenario file names its own lock; Lock must then
	// be empty or the same.
	Lock string
	// Scenario is a scenario file (a path ending in .yaml) or a built-in name (Faults).
	Scenario string
	// Expect is the outcome the check must reach; "" checks only a scenario file's own expect
	// block.
	Expect Outcome
	// Seed drives a built-in scenario's random choices (default 1).
	Seed int64
	// Results is where run folders go (history, verdict, report.html); default: the test's
	// temporary folder. Set it to keep them.
	Results string
	// Count runs the check this many times (default 1), as lockcheck run --count does: the
	// verdict says how many runs matched, and a scenario file's sometimes: block is judged by
	// how many runs showed its outcome against its stated rate.
	Count int
}

// Verdict is a check's result.
type Verdict struct {
	Lock     string // the design
	Scenario string // the scenario's name
	Outcome  Outcome
	// Summary is the verdict in one line: overlaps, each register, liveness.
	Summary string
	// Mismatches are the scenario file's expect lines the run did not meet.
	Mismatches []string
	// Dir is the run folder.
	Dir string
	// Detail is the whole verdict (package checker).
	Detail checker.Verdict

	// Runs is how many runs were made (Check.Count), Matched how many of them reached Expect and
	// met the scenario's expect block. The fields above are of the first run that did not, or
	// of the last run when all did.
	Runs, Matched int
	// Sometimes, for a scenario file with a sometimes: block, says how many runs showed its
	// outcome and whether that count is consistent with its stated rate ("3 of 20 runs showed
	// ...: consistent with its stated rate 4/20 ± 0.15"); Consistent is that judgement (true
	// without a block).
	Sometimes  string
	Shown      int
	Consistent bool
}

// met reports whether one run reached c's expectations.
func (v Verdict) met(c Check) bool {
	return (c.Expect == "" || v.Outcome == c.Expect) && len(v.Mismatches) == 0
}

// Run carries out c against real servers and returns the verdict; it reports a test error when
// the outcome differs from c.Expect (or a scenario file's expect block is not met), and fails the
// test if the check cannot run at all. Run folders go to the test's temporary folder unless
// c.Results says where.
func Run(t testing.TB, c Check) Verdict {
	t.Helper()
	if c.Results == "" {
		c.Results = t.TempDir()
	}
	v, err := Verify(context.Background(), c)
	if err != nil {
		t.Fatalf("lockchecktest: %v", err)
	}
	if v.Runs > 1 && v.Matched < v.Runs {
		t.Errorf("lockchecktest: %s under %s: %d of %d runs matched; the first that did not:", v.Lock, v.Scenario, v.Matched, v.Runs)
	}
	if !v.Consistent {
		t.Errorf("lockchecktest: %s: %s", v.Scenario, v.Sometimes)
	}
	if c.Expect != "" && v.Outcome != c.Expect {
		t.Errorf("lockchecktest: %s under %s: %s, want %s: %s\nrun folder: %s", v.Lock, v.Scenario, v.Outcome, c.Expect, v.Summary, v.Dir)
	}
	if len(v.Mismatches) > 0 {
		t.Errorf("lockchecktest: %s: the verdict does not meet the scenario's expect:\n  %s\n%s\nrun folder: %s",
			v.Scenario, strings.Join(v.Mismatches, "\n  "), v.Summary, v.Dir)
	}
	return v
}

// Verify carries out c (c.Count times) and returns its verdict, whatever it is: c.Expect only
// decides which runs count as matched and which run the verdict describes. The error is for a
// check that could not run (an unknown lock or scenario, servers that would not start, a client
// that broke). Run folders go to c.Results, or to a new temporary folder that is kept (its path
// is in Verdict.Dir).
func Verify(ctx context.Context, c Check) (Verdict, error) {
	sc, err := scenario(c)
	if err != nil {
		return Verdict{}, err
	}
	if err := runner.CheckMachine(); err != nil {
		return Verdict{}, err
	}
	if c.Results == "" {
		if c.Results, err = os.MkdirTemp("", "lockcheck-"); err != nil {
			return Verdict{}, err
		}
	}
	count := max(c.Count, 1)
	var first Verdict
	shown, matched := 0, 0
	for i := 0; i < count; i++ {
		res, err := runner.Run(ctx, sc, runner.Options{ResultsDir: c.Results,
			Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv)})
		if err != nil {
			return Verdict{}, fmt.Errorf("%s: %w", sc.Name, err)
		}
		v := Verdict{Lock: sc.Lock, Scenario: sc.Name, Outcome: checker.Judge(res.Verdict).Outcome,
			Summary: res.Verdict.Summary, Dir: res.Dir, Detail: res.Verdict}
		for _, m := range res.Mismatches {
			v.Mismatches = append(v.Mismatches, m.String())
		}
		if v.met(c) {
			matched++
		}
		if res.Shows != nil && *res.Shows {
			shown++
		}
		if first.Dir == "" && !v.met(c) || i == count-1 && first.Dir == "" {
			first = v
		}
	}
	first.Runs, first.Matched, first.Shown, first.Consistent = count, matched, shown, true
	if st := sc.Sometimes; st != nil {
		first.Consistent = st.Consistent(shown, count)
		word := "consistent with"
		if !first.Consistent {
			word = "NOT consistent with"
		}
		first.Sometimes = fmt.Sprintf("%d of %d runs showed %s: %s its stated rate %s", shown, count, st.What, word, st.Describe())
	}
	return first, nil
}

// scenario loads c's scenario file, or builds the built-in one for its lock.
func scenario(c Check) (*scenarios.Scenario, error) {
	if strings.HasSuffix(c.Scenario, ".yaml") || strings.HasSuffix(c.Scenario, ".yml") {
		sc, err := scenarios.Load(c.Scenario)
		if err != nil {
			return nil, err
		}
		if c.Lock != "" && c.Lock != sc.Lock {
			return nil, fmt.Errorf("%s runs lock %s, not %s", c.Scenario, sc.Lock, c.Lock)
		}
		return sc, nil
	}
	d, err := locks.Get(c.Lock)
	if err != nil {
		return nil, fmt.Errorf("check %q: %w (register it with lockchecktest.Register)", c.Scenario, err)
	}
	seed := c.Seed
	if seed == 0 {
		seed = 1
	}
	sc, err := matrix.Scenario(d, c.Scenario, seed)
	if err != nil {
		return nil, fmt.Errorf("scenario %q: %w (or give a scenario file, *.yaml)", c.Scenario, err)
	}
	return sc, nil
}
