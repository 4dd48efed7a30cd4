package matrix

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Two families, one of dear runs (j) and one of cheap ones (r): each keeps its order, the
// families are merged by the share of their way through, so the dear runs are spread over the
// grid rather than run together, and the grid ends with each family's shortest.
func TestSpreadMergesFamiliesByTheirShareDone(t *testing.T) {
	type run struct {
		name string
		len  time.Duration
	}
	jobs := []run{{"j1", 9 * time.Second}, {"j2", 9 * time.Second}, {"r1", 4 * time.Second}, {"r2", 4 * time.Second},
		{"r3", 4 * time.Second}, {"r4", 4 * time.Second}, {"r5", 4 * time.Second}, {"r6", 4 * time.Second}}
	got := spread(jobs, func(r run) string { return r.name[:1] }, func(r run) time.Duration { return r.len })
	var names []string
	for _, r := range got {
		names = append(names, r.name)
	}
	// Weights (length and a second): j 10+10, r 5×6. At each step the family least far through.
	want := "j1 r1 r2 r3 j2 r4 r5 r6" // after r3 both are half way: the longer run first
	if s := strings.Join(names, " "); s != want {
		t.Errorf("order %s, want %s", s, want)
	}
	if len(got) != len(jobs) {
		t.Fatalf("%d runs out of %d", len(got), len(jobs))
	}
	// One family alone keeps its order.
	if one := spread(jobs[2:], func(r run) string { return "r" }, func(r run) time.Duration { return r.len }); !slices.Equal(one, jobs[2:]) {
		t.Errorf("one family reordered: %v", one)
	}
}
