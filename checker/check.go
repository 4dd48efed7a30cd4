package checker

import (
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

const (
	defaultStuckAfter             = time.Second
	defaultLinearizabilityTimeout = 10 * time.Second
)

// Options tune the checks. Zero values take the defaults.
type Options struct {
	// StuckAfter: an unavailable window still open at the end of the run and longer than this
	// means the lock was stuck. Default 1s.
	StuckAfter time.Duration
	// LinearizabilityTimeout is porcupine's time budget per register; running out gives
	// "unknown", never a guess. Default 10s.
	LinearizabilityTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.StuckAfter <= 0 {
		o.StuckAfter = defaultStuckAfter
	}
	if o.LinearizabilityTimeout <= 0 {
		o.LinearizabilityTimeout = defaultLinearizabilityTimeout
	}
	return o
}

// Check judges a history. It does not modify events; they need not be sorted.
func Check(events []history.Event, opts Options) Verdict {
	opts = opts.withDefaults()
	events = sortedEvents(events)
	b := runBounds(events)
	ops := clientOps(events)
	tl := buildTimelines(events, b.end)
	v := Verdict{
		RunStart:        b.start,
		RunLength:       time.Duration(b.end - b.start),
		Events:          len(events),
		MutualExclusion: mutualExclusion(tl.holds, b.start),
		Registers:       checkRegisters(events, ops, opts.LinearizabilityTimeout),
		Liveness:        liveness(ops, tl, b, opts.StuckAfter),
	}
	v.Summary = summarize(v)
	return v
}

// checkRegisters judges every register the history mentions: those critical sections touched,
// and those only the resource reported (not applicable). Porcupine runs for each in parallel,
// each with its own budget.
func checkRegisters(events []history.Event, ops []op, budget time.Duration) map[string]RegisterVerdict {
	data := collectRegisters(ops)
	final, initial := finalValues(events), initialValues(events)
	for _, names := range []map[string]int64{final, initial} {
		for name := range names {
			if data[name] == nil {
				data[name] = &registerData{verdict: RegisterVerdict{Linearizable: NotApplicable}}
			}
		}
	}
	ids := clientIDs(ops)
	var wg sync.WaitGroup
	for name, r := range data {
		if !r.verdict.Applicable {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.verdict.Linearizable = linearizable(r.sections, initial[name], ids, budget)
		}()
	}
	wg.Wait()
	out := make(map[string]RegisterVerdict, len(data))
	for name, r := range data {
		lostUpdates(&r.verdict, initial[name], final, name)
		out[name] = r.verdict
	}
	return out
}
