package checker

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// Client string ids in these tests: any three distinct numbers will do.
var testIDs = map[int32]int{1: 0, 2: 1, 3: 2}

// serialSections is n critical sections of 3 clients on one register, mostly one after another
// with some overlapping their neighbour, whose reads and writes agree with a real register
// starting at initial. Outcomes are accepted, rejected, read-only, and (from unknownFrom on, if
// >= 0) sometimes unknown: the write was sent and its reply never came; a coin says whether it
// landed (right away, as on a healthy resource), and later reads agree.
func serialSections(seed uint64, n int, initial int64, unknownFrom int) []section {
	rng := rand.New(rand.NewPCG(seed, 7))
	value := initial
	var out []section
	for i := range n {
		call := int64(i) * 100
		ret := call + 80
		if rng.IntN(5) == 0 {
			ret += 150 // overlaps the next section: no cut here
		}
		s := section{client: int32(i%3 + 1), cs: int64(i + 1), call: call, ret: ret, Read: value}
		switch r := rng.IntN(10); {
		case unknownFrom >= 0 && i >= unknownFrom && r == 0:
			s.Write, s.ret = history.Unknown, call+60 // its end: when the write was sent
			if rng.IntN(2) == 0 {
				value++
			}
		case r < 7:
			s.Write = history.Accepted
			value++
		case r < 9:
			s.Write = history.Rejected
		}
		out = append(out, s)
	}
	return out
}

func wholeVerdict(sections []section, initial int64) string {
	switch porcupine.CheckOperations(incrementModel([]regState{{v: initial}}), operations(sections, testIDs, nil)) {
	case true:
		return Yes
	}
	return No
}

// Checking segment by segment must give what porcupine gives on the whole history: on consistent
// histories, and on ones broken before, across and after the cuts, also when writes of unknown
// outcome come early (they no longer keep the rest of the history in one piece).
func TestSegmentsAgreeWithTheWholeHistory(t *testing.T) {
	const n = 3*minSegment + 500
	firstUnknown := func(s []section, from int) int {
		for i := from; i < len(s); i++ {
			if s[i].Write == history.Unknown {
				return i
			}
		}
		panic("no unknown write")
	}
	cases := []struct {
		name   string
		unk    int
		mutate func([]section)
		want   string
	}{
		{"consistent", -1, nil, Yes},
		{"consistent, unknown writes late", 2*minSegment + 100, nil, Yes},
		{"consistent, unknown writes from the start", 0, nil, Yes},
		{"stale read in the first segment", -1, func(s []section) { s[10].Read-- }, No},
		{"stale read in a later segment", -1, func(s []section) { s[2*minSegment+40].Read-- }, No},
		{"stale read after early unknown writes", 0, func(s []section) { s[2*minSegment+40].Read-- }, No},
		{"read from the future in the last segment", -1, func(s []section) { s[n-5].Read += 2 }, No},
		{"a rejected write that took effect", -1, func(s []section) {
			for i := minSegment + 300; i < n; i++ {
				if s[i].Write == history.Accepted {
					s[i].Write = history.Rejected
					return
				}
			}
		}, No},
		{"an unknown write that landed long after it was sent, undoing later writes", 0, func(s []section) {
			// Every read from some point on one lower, as if the write of an earlier section
			// (which read that value) had landed again much later.
			i := firstUnknown(s, minSegment+200)
			for j := i + 40; j < len(s); j++ {
				s[j].Read -= 3
			}
		}, No},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := serialSections(3, n, 5, c.unk)
			if c.mutate != nil {
				c.mutate(s)
			}
			whole := wholeVerdict(s, 5)
			got := linearizableInSegments(s, 5, testIDs, time.Minute).verdict
			if whole != c.want || got != whole {
				t.Fatalf("whole history: %s, in segments: %s, want %s", whole, got, c.want)
			}
		})
	}
}

// Random histories, many with unknown writes and a few with one value changed: segments and the
// whole history must always agree. This is what makes the end states of a segment (endStates)
// trustworthy: a wrong end state shows up as a disagreement.
func TestSegmentsAgreeOnRandomHistories(t *testing.T) {
	const n = 2*minSegment + 300
	for seed := uint64(1); seed <= 24; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		s := serialSections(seed, n, 0, rng.IntN(n))
		if seed%3 == 0 {
			s[rng.IntN(n)].Read += int64(rng.IntN(3)) - 1
		}
		whole := wholeVerdict(s, 0)
		got := linearizableInSegments(s, 0, testIDs, time.Minute).verdict
		if got != whole {
			t.Fatalf("seed %d: whole history %s, in segments %s", seed, whole, got)
		}
	}
}

// The pending-write model is the atomic-increment model (read and write at one moment, an
// unknown write free to take effect at any moment after its call) with one physical fact added:
// the read was over when the client sent the write. Whatever it calls linearizable, the older,
// looser model must too.
func TestThePendingModelIsNoLooserThanTheAtomicOne(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		var s []section
		for i := range 6 {
			call := int64(rng.IntN(50))
			sec := section{client: int32(i%3 + 1), call: call, ret: call + int64(1+rng.IntN(30)), Read: int64(rng.IntN(3))}
			sec.Write = []string{history.Accepted, history.Rejected, history.Unknown, ""}[rng.IntN(4)]
			s = append(s, sec)
		}
		if wholeVerdict(s, 0) != Yes {
			continue
		}
		atomic := append([]section(nil), s...)
		for i := range atomic {
			if atomic[i].Write == history.Unknown {
				atomic[i].ret = 1 << 40
			}
		}
		if !porcupine.CheckOperations(atomicIncrementModel(0), operations(atomic, testIDs, nil)) {
			t.Fatalf("seed %d: linearizable with pending writes, not as atomic increments: %+v", seed, s)
		}
	}
}

// atomicIncrementModel is the model before pending writes: an unknown write adds 0 or 1 at the
// moment of its read.
func atomicIncrementModel(initial int64) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{initial} },
		Step: func(state, _, output interface{}) []interface{} {
			v, s := state.(int64), output.(section)
			if s.Read != v {
				return nil
			}
			switch s.Write {
			case history.Accepted:
				return []interface{}{v + 1}
			case history.Unknown:
				return []interface{}{v, v + 1}
			}
			return []interface{}{v}
		},
	}
	return nm.ToModel()
}
