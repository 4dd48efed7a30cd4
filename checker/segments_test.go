package checker

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// serialSections is n critical sections of 3 clients on one register, mostly one after another
// with some overlapping their neighbour, whose reads and writes agree with a real register
// starting at initial. Outcomes are accepted, rejected, read-only, and (from unknownFrom on, if
// >= 0) sometimes unknown.
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
		s := section{client: history.Client(i%3 + 1), cs: int64(i + 1), call: call, ret: ret, Read: value}
		switch r := rng.IntN(10); {
		case unknownFrom >= 0 && i >= unknownFrom && r == 0:
			s.Write, s.ret = history.Unknown, never
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
	ids := map[string]int{"client-1": 0, "client-2": 1, "client-3": 2}
	switch porcupine.CheckOperations(incrementModel(initial), operations(sections, ids)) {
	case true:
		return Yes
	}
	return No
}

// Checking segment by segment must give what porcupine gives on the whole history: on consistent
// histories, and on ones broken before, across and after the cuts.
func TestSegmentsAgreeWithTheWholeHistory(t *testing.T) {
	ids := map[string]int{"client-1": 0, "client-2": 1, "client-3": 2}
	const n = 3*minSegment + 500
	cases := []struct {
		name   string
		unk    int
		mutate func([]section)
		want   string
	}{
		{"consistent", -1, nil, Yes},
		{"consistent, unknown writes late", 2*minSegment + 100, nil, Yes},
		{"stale read in the first segment", -1, func(s []section) { s[10].Read-- }, No},
		{"stale read in a later segment", -1, func(s []section) { s[2*minSegment+40].Read-- }, No},
		{"read from the future in the last segment", -1, func(s []section) { s[n-5].Read += 2 }, No},
		{"a rejected write that took effect", -1, func(s []section) {
			for i := minSegment + 300; i < n; i++ {
				if s[i].Write == history.Accepted {
					s[i].Write = history.Rejected
					return
				}
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
			got := linearizableInSegments(s, 5, ids, time.Minute)
			if whole != c.want || got != whole {
				t.Fatalf("whole history: %s, in segments: %s, want %s", whole, got, c.want)
			}
		})
	}
}
