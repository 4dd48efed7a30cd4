// Package shrink reduces a scenario that breaks a lock to the smallest fault schedule that still
// breaks it: delta debugging (Zeller and Hildebrandt's ddmin, 2002) over the planned faults, then
// each remaining fault made simpler (a canonical client, its first occurrence, fewer nodes,
// shorter, a smaller clock step), then a shorter run. A step is taken only when k of k trials of
// the candidate show the violation, so a candidate that breaks the lock only sometimes is never
// accepted. Shrink is a pure function of the scenario and a Trial: the real runs come in through
// the Trial (package runner, in `lockcheck shrink`), a unit test passes a fake.
package shrink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Trial runs a candidate scenario once and reports whether the violation showed.
type Trial func(ctx context.Context, sc *scenarios.Scenario) (violated bool, err error)

// Options bound the search.
type Options struct {
	K         int // trials of a candidate that must all show the violation (default 2)
	MaxTrials int // trials in all, the start's check included (default 60)
	// MinDuration is the shortest run tried (default 6 TTLs, at least 2s).
	MinDuration time.Duration
	// Log, if set, is told each accepted step and each candidate's fate.
	Log func(format string, a ...any)
}

// Result is the smallest scenario found and what it took.
type Result struct {
	Scenario      *scenarios.Scenario
	Before, After int      // planned faults (and random packages) at the start and at the end
	Trials        int      // trials run
	Steps         []string // the accepted steps, in words
	// Exhausted: the trial budget ran out before every step was tried; the result is the
	// smallest scenario accepted so far.
	Exhausted bool
	// Repeats > 0: no schedule showed the violation k times in a row, but the last fault, given
	// Repeats chances in one run (Repetition), did; the result is that, not shrunk further.
	Repeats int
}

// Repetition is how many chances repeated gives a fault whose effect hangs on a race that no
// program point decides (which of two goroutines runs first when a frozen process wakes): with
// one chance in four per fault, twelve show it in 97 runs of 100. A trial stops at the first
// violation, so the chances after it cost nothing.
const Repetition = 12

// ErrNotReproduced: the scenario given does not show the violation in k of k trials, so there is
// nothing to shrink from.
var ErrNotReproduced = errors.New("the schedule does not reproduce the violation")

// errBudget stops the search when the trial budget is spent.
var errBudget = errors.New("trial budget spent")

type search struct {
	ctx   context.Context
	trial Trial
	o     Options
	res   Result
	cur   *scenarios.Scenario
	// tried holds the candidates rejected so far, by their YAML: one is not tried twice.
	tried map[string]bool
}

// Shrink shrinks sc. It fails with ErrNotReproduced when sc itself does not show the violation
// k times in a row, and with a Trial's error at once (a harness error is not a verdict).
func Shrink(ctx context.Context, sc *scenarios.Scenario, trial Trial, o Options) (Result, error) {
	if o.K < 1 {
		o.K = 2
	}
	if o.MaxTrials < 1 {
		o.MaxTrials = 60
	}
	if o.MinDuration <= 0 {
		o.MinDuration = max(2*time.Second, 6*sc.TTL.D())
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	s := &search{ctx: ctx, trial: trial, o: o, cur: sc, tried: map[string]bool{}}
	s.res.Before = len(sc.Nemesis)
	ok, err := s.holds(sc)
	if err == nil && !ok {
		// The whole set, pinned, may miss where its last fault alone does not: the faults before
		// it shift which pass of a point comes when (lastAlone). One candidate before giving up.
		ok, err = s.lastAlone()
	}
	if err == nil && !ok {
		ok, err = s.repeated()
	}
	switch {
	case err != nil && !errors.Is(err, errBudget):
		return s.res, err
	case !ok:
		return s.res, ErrNotReproduced
	}
	if s.res.Repeats > 0 {
		// The copies are one fault given several chances: dropping or changing some of them only
		// lowers the rate, which k trials in a row cannot measure.
		s.res.Scenario, s.res.After = s.cur, 1
		return s.res, nil
	}
	err = s.run()
	s.res.Scenario, s.res.After = s.cur, len(s.cur.Nemesis)
	if errors.Is(err, errBudget) {
		s.res.Exhausted, err = true, nil
	}
	return s.res, err
}

func (s *search) run() error {
	// A shorter run first: every rejected candidate then costs less.
	if err := s.shorterRun(); err != nil {
		return err
	}
	if _, err := s.lastAlone(); err != nil {
		return err
	}
	if err := s.ddmin(); err != nil {
		return err
	}
	for i := range s.cur.Nemesis {
		if err := s.simplify(i); err != nil {
			return err
		}
	}
	// A fault that was needed beside another at its old place may not be once that one is
	// simpler (at its first acquisition, say): one more pass of ddmin.
	if len(s.cur.Nemesis) > 1 {
		if err := s.ddmin(); err != nil {
			return err
		}
	}
	return s.shorterRun()
}

// holds runs sc up to K times and reports whether every run showed the violation; it stops at
// the first that did not.
func (s *search) holds(sc *scenarios.Scenario) (bool, error) {
	for range s.o.K {
		if s.res.Trials >= s.o.MaxTrials {
			return false, errBudget
		}
		if err := s.ctx.Err(); err != nil {
			return false, err
		}
		s.res.Trials++
		v, err := s.trial(s.ctx, sc)
		if err != nil {
			return false, err
		}
		if !v {
			return false, nil
		}
	}
	return true, nil
}

// try builds the candidate change makes of the current scenario and takes it if it holds.
func (s *search) try(what string, change func(c *scenarios.Scenario)) (bool, error) {
	c := *s.cur
	c.Nemesis = slices.Clone(c.Nemesis)
	change(&c)
	cand, err := scenarios.New(c)
	if err != nil { // a candidate the rules refuse is no candidate
		msg, _, more := strings.Cut(err.Error(), "\n")
		if more {
			msg += " (and more)"
		}
		s.o.Log("skip %s: %s", what, msg)
		return false, nil
	}
	key, err := cand.YAML()
	if err != nil {
		return false, err
	}
	if s.tried[string(key)] {
		s.o.Log("%s: rejected before", what)
		return false, nil
	}
	ok, err := s.holds(cand)
	if err != nil {
		return false, err
	}
	s.tried[string(key)] = !ok
	s.o.Log("%s: %s", what, map[bool]string{true: "kept (violated in every trial)", false: "rejected"}[ok])
	if ok {
		s.cur = cand
		s.res.Steps = append(s.res.Steps, what)
	}
	return ok, nil
}

// ddmin drops entries of the nemesis list, in ever smaller chunks, while the rest still breaks
// the lock; it ends with a list none of whose entries can be dropped alone.
func (s *search) ddmin() error {
	n := 2
	for len(s.cur.Nemesis) >= 1 {
		all := s.cur.Nemesis
		if len(all) == 1 {
			_, err := s.try("drop every fault", func(c *scenarios.Scenario) { c.Nemesis = nil })
			return err
		}
		n = min(n, len(all))
		chunks := split(len(all), n)
		reduced := false
		for _, ch := range chunks { // a chunk alone
			keep := all[ch[0]:ch[1]]
			ok, err := s.try(fmt.Sprintf("keep only faults %s of %d", span(ch), len(all)),
				func(c *scenarios.Scenario) { c.Nemesis = slices.Clone(keep) })
			if err != nil {
				return err
			}
			if ok {
				n, reduced = 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for _, ch := range chunks { // everything but a chunk
				rest := slices.Concat(all[:ch[0]], all[ch[1]:])
				ok, err := s.try(fmt.Sprintf("drop faults %s of %d", span(ch), len(all)),
					func(c *scenarios.Scenario) { c.Nemesis = rest })
				if err != nil {
					return err
				}
				if ok {
					n, reduced = max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(all) {
				return nil
			}
			n = min(2*n, len(all))
			continue
		}
		// Fewer faults may need less of a run: rejected candidates then cost less.
		if err := s.shorterRun(); err != nil {
			return err
		}
	}
	return nil
}

// lastAlone tries the last fault alone, at the first pass of its program point, and reports
// whether it was kept. A hunt's find usually follows from the fault applied just before it, but
// ddmin cannot see that when the fault is pinned to the N-th pass of a point: the faults before
// it (a killed client, a slow one) change how many passes each client makes, so once they are
// dropped the N-th pass comes at another moment of the run, and every subset misses (a redis-py
// find of 9 faults, the last one the 81st acquisition of client-3, spent the whole trial budget
// that way). One candidate, k trials at most.
func (s *search) lastAlone() (bool, error) {
	all := s.cur.Nemesis
	if len(all) < 2 || all[len(all)-1].Random != nil {
		return false, nil
	}
	last := all[len(all)-1]
	what := fmt.Sprintf("keep only fault %d of %d", len(all), len(all))
	if last.Point != "" && last.Occurrence > 1 {
		what += fmt.Sprintf(", at the first pass of %s instead of pass %d", last.Point, last.Occurrence)
		last.Occurrence = 1
	}
	return s.try(what, func(c *scenarios.Scenario) { c.Nemesis = []scenarios.Entry{last} })
}

// repeated tries the last fault alone, again and again in one run: Repetition copies, at
// successive passes of its point (spaced so that one is over before the next) or, pinned to a
// time, one after another, the run lengthened to hold them. It is the last resort of a start
// that does not reproduce k times in a row: a find whose cause is the fault, but whose effect a
// race decides each time (go-zookeeper's waiter frozen through a release: the library's reader
// takes the buffered deletion before its read deadline fires in about one wake of four).
func (s *search) repeated() (bool, error) {
	all := s.cur.Nemesis
	if len(all) == 0 || all[len(all)-1].Random != nil {
		return false, nil
	}
	last := all[len(all)-1].Fault
	ttl := s.cur.TTL.D()
	w := s.cur.Workload
	cycle := max(w.Hold.D()+w.Think.D(), ttl) // a hold, or a lease when holds are short
	busy := last.For.D() + 2*ttl              // the fault and its aftermath (a session's expiry)
	var copies []scenarios.Entry
	var end time.Duration
	if last.Point != "" {
		// A pass of a hold's point by whoever holds or waits comes every hold; a given client's,
		// after the others' holds too.
		per := cycle
		if !nemesis.IsClientRole(last.Target) {
			per *= time.Duration(s.cur.Clients)
		}
		every := max(1, int((busy+per-1)/per))
		for i := range Repetition {
			f := last
			f.Occurrence = max(1, last.Occurrence) + i*every
			copies = append(copies, scenarios.Entry{Fault: f})
		}
		end = time.Duration(max(1, last.Occurrence)+Repetition*every)*per*3/2 + busy // with room for the slack
	} else {
		gap := busy + cycle
		for i := range Repetition {
			f := last
			f.At = scenarios.Duration(last.At.D() + time.Duration(i)*gap)
			copies = append(copies, scenarios.Entry{Fault: f})
		}
		end = last.At.D() + time.Duration(Repetition)*gap + 2*ttl
	}
	ok, err := s.try(fmt.Sprintf("the last fault alone, given %d chances in one run", Repetition), func(c *scenarios.Scenario) {
		c.Nemesis = copies
		c.Duration = scenarios.Duration(max(c.Duration.D(), end).Round(time.Second))
	})
	if ok {
		s.res.Repeats = Repetition
	}
	return ok, err
}

// split cuts [0,l) into n chunks as even as can be, as [start, end) pairs.
func split(l, n int) [][2]int {
	var out [][2]int
	start := 0
	for i := range n {
		end := start + (l-start)/(n-i)
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}

// span names a chunk of faults by their 1-based positions: "3" or "2–4".
func span(ch [2]int) string {
	if ch[1]-ch[0] == 1 {
		return fmt.Sprint(ch[0] + 1)
	}
	return fmt.Sprintf("%d–%d", ch[0]+1, ch[1])
}

// simplify makes the i-th entry simpler, one kind of step after another.
func (s *search) simplify(i int) error {
	e := s.cur.Nemesis[i]
	if e.Random != nil {
		return nil
	}
	name := fmt.Sprintf("fault %d (%s)", i+1, e.Kind)
	set := func(what string, change func(f *nemesis.Fault)) (bool, error) {
		return s.try(name+": "+what, func(c *scenarios.Scenario) {
			f := c.Nemesis[i].Fault
			change(&f)
			c.Nemesis[i].Fault = f
		})
	}
	// The first pass first: then every client is at the same place in its run.
	if e.Point != "" && e.Occurrence > 1 {
		if _, err := set(fmt.Sprintf("at the first pass of %s instead of pass %d", e.Point, e.Occurrence),
			func(f *nemesis.Fault) { f.Occurrence = 1 }); err != nil {
			return err
		}
	}
	// One client, the first: clients are alike, and client-1 is the first to take the lock.
	if t := e.Target; isClient(t) && t != "client-1" {
		if _, err := set("on client-1 instead of "+t, func(f *nemesis.Fault) { f.Target = "client-1" }); err != nil {
			return err
		}
	}
	if err := s.fewerNodes(i, name); err != nil {
		return err
	}
	if f := s.cur.Nemesis[i].Fault; f.For > 0 {
		get := func(f nemesis.Fault) time.Duration { return f.For.D() }
		put := func(f *nemesis.Fault, d time.Duration) { f.For = scenarios.Duration(d) }
		if err := s.bisect(i, name, "for", get, put); err != nil {
			return err
		}
	}
	if p, ok := s.cur.Nemesis[i].Params.(*nemesis.ClockParams); ok && p.Offset != 0 {
		get := func(f nemesis.Fault) time.Duration { return abs(f.Params.(*nemesis.ClockParams).Offset.D()) }
		put := func(f *nemesis.Fault, d time.Duration) {
			q := *f.Params.(*nemesis.ClockParams)
			q.Offset = scenarios.Signed(d * sign(q.Offset.D()))
			f.Params = &q
		}
		return s.bisect(i, name, "clock step", get, put)
	}
	return nil
}

// bisect shortens a length of the i-th fault: halfway to zero and back, three times, so the
// result is within an eighth of the shortest that works (rounded to 10 ms). A length just above
// the shortest that showed the violation k times can still miss it now and then (a lease that
// runs out a few milliseconds before the holder wakes), so when a shorter one failed, the
// result is backed off by the last step, a candidate like any other.
func (s *search) bisect(i int, name, what string, get func(nemesis.Fault) time.Duration, put func(*nemesis.Fault, time.Duration)) error {
	orig := get(s.cur.Nemesis[i].Fault)
	lo, hi := time.Duration(0), orig
	set := func(d time.Duration) func(c *scenarios.Scenario) {
		return func(c *scenarios.Scenario) {
			f := c.Nemesis[i].Fault
			put(&f, d)
			c.Nemesis[i].Fault = f
		}
	}
	for range 3 {
		mid := ((lo + hi) / 2).Round(10 * time.Millisecond)
		if mid <= lo || mid >= hi {
			break
		}
		ok, err := s.try(fmt.Sprintf("%s: %s %s instead of %s", name, what, mid, hi.Round(time.Millisecond)), set(mid))
		if err != nil {
			return err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	if back := min(orig, hi+(hi-lo)); lo > 0 && back > hi {
		_, err := s.try(fmt.Sprintf("%s: %s %s, a margin above the shortest that broke it (%s)", name, what, back, hi), set(back))
		return err
	}
	return nil
}

// fewerNodes narrows a partition or delay to one link: one lock node instead of several.
func (s *search) fewerNodes(i int, name string) error {
	nodes := func(p any) *[]string {
		switch q := p.(type) {
		case *nemesis.PartitionParams:
			return &q.Nodes
		case *nemesis.DelayParams:
			return &q.Nodes
		}
		return nil
	}
	f := s.cur.Nemesis[i].Fault
	ns := nodes(f.Params)
	if ns == nil {
		return nil
	}
	all := *ns
	if len(all) == 0 {
		all = s.cur.NodeNames()
	}
	if len(all) < 2 {
		return nil
	}
	for _, n := range all {
		ok, err := s.try(fmt.Sprintf("%s: only the link to %s", name, n), func(c *scenarios.Scenario) {
			g := c.Nemesis[i].Fault
			switch q := g.Params.(type) {
			case *nemesis.PartitionParams:
				r := *q
				r.Nodes = []string{n}
				g.Params = &r
			case *nemesis.DelayParams:
				r := *q
				r.Nodes = []string{n}
				g.Params = &r
			}
			c.Nemesis[i].Fault = g
		})
		if err != nil || ok {
			return err
		}
	}
	return nil
}

// shorterRun halves the run's length while the violation still shows, down to MinDuration, and
// not below the end of the last fault pinned to a time (plus two TTLs for it to take effect).
func (s *search) shorterRun() error {
	for {
		d := s.cur.Duration.D()
		last := time.Duration(0)
		for _, e := range s.cur.Nemesis {
			if e.Random == nil && e.Point == "" {
				last = max(last, e.At.D()+e.For.D()+2*s.cur.TTL.D())
			}
		}
		next := max(s.o.MinDuration, (d / 2).Round(100*time.Millisecond), last.Round(100*time.Millisecond))
		if next >= d {
			return nil
		}
		ok, err := s.try(fmt.Sprintf("run %s instead of %s", next, d), func(c *scenarios.Scenario) {
			c.Duration = scenarios.Duration(next)
		})
		if err != nil || !ok {
			return err
		}
	}
}

func isClient(t string) bool { return len(t) > 7 && t[:7] == "client-" }

func abs(d time.Duration) time.Duration { return max(d, -d) }

func sign(d time.Duration) time.Duration {
	if d < 0 {
		return -1
	}
	return 1
}
