package checker

import (
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

const (
	defaultStuckAfter             = time.Second
	defaultStarvedAfter           = 3 * time.Second
	defaultRefusedLimit           = 0.5
	defaultLinearizabilityTimeout = 10 * time.Second
)

// Options tune the checks. Zero values take the defaults.
type Options struct {
	// StuckAfter: an unavailable window still open at the end of the run and longer than this
	// means the lock was stuck. Default 1s.
	StuckAfter time.Duration
	// StarvedAfter: a client passed over for longer than this (ClientLiveness.PassedOver) is
	// starved. Default 3s; a scenario's run sets it from the scenario (runner).
	StarvedAfter time.Duration
	// RefusedLimit: askers refused for more than this share of the run (Liveness.RefusedShare)
	// means the lock barely served. Default 0.5.
	RefusedLimit float64
	// FirstComeFirstServed: the design promises it (locks.Design.Fair), so unfair overtakes count
	// against the verdict (Fairness.Unfair, Judge).
	FirstComeFirstServed bool
	// LinearizabilityTimeout is porcupine's time budget per register; running out gives
	// "unknown", never a guess. Default 10s.
	LinearizabilityTimeout time.Duration
	// KeepsPlace is how long the first attempt of an acquire op surely keeps the client's place
	// in a queued lock's line (the runner: the workload's attempt, less the command timeout a
	// client may keep to leave the line in time). An op retries until its acquire timeout, and a
	// waiter whose attempt gives up leaves the line and joins it again at the back with the
	// next, which the history does not record: an overtake of a waiter that asked longer ago than
	// this is not counted unfair (Fairness.Unfair). 0: an op keeps its place until it ends.
	KeepsPlace time.Duration
	// AttemptBound is how long one acquire attempt may last (the workload's attempt): a run whose
	// fault was not exercised says so when no attempt could outlast a lease (Verdict.Unexercised).
	// 0: not known.
	AttemptBound time.Duration
}

func (o Options) withDefaults() Options {
	if o.StuckAfter <= 0 {
		o.StuckAfter = defaultStuckAfter
	}
	if o.StarvedAfter <= 0 {
		o.StarvedAfter = defaultStarvedAfter
	}
	if o.RefusedLimit <= 0 {
		o.RefusedLimit = defaultRefusedLimit
	}
	if o.LinearizabilityTimeout <= 0 {
		o.LinearizabilityTimeout = defaultLinearizabilityTimeout
	}
	return o
}

// Check judges a history. It does not modify events; they need not be sorted.
func Check(events []history.Event, opts Options) Verdict {
	return FromEvents(events).Check(opts)
}

// Check judges the history. It remembers, for Visualize, the piece of each register's history
// that is not linearizable.
func (l *Log) Check(opts Options) Verdict {
	opts = opts.withDefaults()
	b := l.bounds()
	ops := l.clientOps()
	tl := l.buildTimelines(b.end)
	unavailable := unavailableWindows(tl, b.end)
	v := Verdict{
		RunStart:        b.start,
		RunLength:       time.Duration(b.end - b.start),
		Server:          l.server,
		Events:          l.events,
		MutualExclusion: l.mutualExclusion(tl.holds, b.start),
		Registers:       l.checkRegisters(ops, opts.LinearizabilityTimeout),
		Liveness:        l.liveness(ops, unavailable, b, opts.StuckAfter),
	}
	l.classifyWindows(&v.MutualExclusion, tl.holds, ops, b)
	v.Inconclusive = l.inconclusive(ops, v)
	acqs, deaths := l.acquireOps(ops)
	lapses := l.lapses(ops, b.end)
	cover := l.faultCover().withLapses(lapses)
	v.Fairness = fairness(acqs, deaths, cover, b, int64(opts.KeepsPlace))
	v.Fairness.Promised = opts.FirstComeFirstServed
	v.Liveness.Clients, v.Liveness.StarvedBy = clientLiveness(acqs, deaths, cover, b, opts.StarvedAfter)
	v.Liveness.StarvedAfter, v.Liveness.RefusedLimit = opts.StarvedAfter, opts.RefusedLimit
	v.Liveness.Refused, v.Liveness.RefusedShare = refused(unavailable, acqs, cover, b)
	v.Liveness.BarelyServed = v.Liveness.Acquisitions > 0 && v.Liveness.RefusedShare > opts.RefusedLimit
	v.Collateral = l.collateral(v.Registers, b.start, lapses)
	v.FaultFree = len(l.nemesis) == 0
	v.Unexercised = l.unexercised(tl, ops, b, opts.AttemptBound)
	v.Scheduling = l.scheduling(b.start)
	v.Lease = l.leaseKept()
	v.Summary = summarize(v)
	v.Outcome, v.Headline = Judge(v).Outcome, Headline(v)
	return v
}

// DoubleOwnership finds the windows of double ownership in events and gives each its class, and
// judges nothing else: cheap enough to ask of a run still going (a hunt that stops at its first
// broken promise).
func DoubleOwnership(events []history.Event) MutualExclusion {
	l := FromEvents(events)
	b := l.bounds()
	tl := l.buildTimelines(b.end)
	m := l.mutualExclusion(tl.holds, b.start)
	l.classifyWindows(&m, tl.holds, l.clientOps(), b)
	return m
}

// checkRegisters judges every register the history mentions: those critical sections touched,
// and those only the resource reported (not applicable). Porcupine runs for each in parallel,
// each with its own budget.
func (l *Log) checkRegisters(ops []op, budget time.Duration) map[string]RegisterVerdict {
	data := l.collectRegisters(ops)
	final, initial := l.finalValues(), l.initialValues()
	for _, names := range []map[string]int64{final, initial} {
		for name := range names {
			if data[name] == nil {
				data[name] = &registerData{verdict: RegisterVerdict{Linearizable: NotApplicable}}
			}
		}
	}
	ids := l.clientIDs(ops)
	var wg sync.WaitGroup
	var mu sync.Mutex
	l.pieces = map[string]*piece{}
	for name, r := range data {
		if !r.verdict.Applicable {
			continue
		}
		wg.Go(func() {
			res := linearizableInSegments(r.sections, initial[name], ids, budget)
			r.verdict.Linearizable = res.verdict
			r.sections = nil // a soak run's sections are tens of megabytes: not kept past here
			if p := res.piece; p != nil {
				r.verdict.Piece = &Piece{Start: p.start, End: p.end, Sections: len(p.sections)}
				mu.Lock()
				l.pieces[name] = p
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	out := make(map[string]RegisterVerdict, len(data))
	for name, r := range data {
		lostUpdates(&r.verdict, initial[name], final, name)
		out[name] = r.verdict
	}
	return out
}
