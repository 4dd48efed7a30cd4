package report

import (
	"fmt"
	"sort"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
)

// A long run (a soak of half an hour has about 100,000 holds) cannot be drawn hold by hold on one
// page: the drawing alone was hundreds of megabytes. Its page shows an overview of the whole run
// (overview.go) and, drawn in full, the windows that matter: around each double ownership, each
// fault and each death, as many as fit the page's budget.
const (
	maxDrawnHolds = 2000 // more holds than this and the run is "long"
	maxWindows    = 24
	// windowBudget bounds the elements (holds, waits, register marks) all detail windows draw
	// together: about 250 bytes each, so a few megabytes of page.
	windowBudget = 24000
	maxWindow    = 4 * time.Second // a longer fault is shown from its start
	minPad       = 150 * time.Millisecond
	maxPad       = time.Second
	maxListed    = 200 // windows not drawn are listed, up to this many
)

// window is a span of a long run drawn in full, and why.
type window struct {
	from, to int64
	why      []string
	bad      bool // it shows a double ownership or a death
	drawn    bool
	id       string
}

// candidateWindow pads [start, end] on both sides by half its length (within minPad..maxPad),
// and keeps it within maxWindow by showing the beginning of a long event.
func candidateWindow(start, end int64, why string, bad bool) window {
	pad := int64(min(max(time.Duration(end-start)/2, minPad), maxPad))
	w := window{from: start - pad, to: end + pad, why: []string{why}, bad: bad}
	if w.to-w.from > int64(maxWindow) {
		w.to = w.from + int64(maxWindow)
	}
	return w
}

// detailWindows picks the windows of a long run to draw: double ownership and deaths first, then
// faults in time order; overlapping ones merged; within maxWindows and windowBudget.
func detailWindows(r *run) []window {
	var cands []window
	for _, o := range r.judged.Verdict.MutualExclusion.Windows {
		cands = append(cands, candidateWindow(o.Start, o.Start+int64(o.Length),
			fmt.Sprintf("%s and %s both believed they held the lock (%s)", o.Clients[0], o.Clients[1], checker.Human(o.Length)), true))
	}
	for _, m := range r.marks {
		if m.Kind != "crash" {
			continue
		}
		cands = append(cands, candidateWindow(m.Time, m.Time, m.Client+" died", true))
	}
	for _, f := range r.faults {
		cands = append(cands, candidateWindow(f.Start, f.End, nemesis.Label(f), false))
	}
	for i := range cands { // within the run
		c := &cands[i]
		c.from, c.to = max(c.from, r.start), min(c.to, r.end)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].from < cands[j].from })
	var merged []window
	for _, c := range cands {
		if n := len(merged); n > 0 && c.from <= merged[n-1].to && max(c.to, merged[n-1].to)-merged[n-1].from <= int64(maxWindow) {
			last := &merged[n-1]
			last.to = max(last.to, c.to)
			last.why = append(last.why, c.why...)
			last.bad = last.bad || c.bad
			continue
		}
		merged = append(merged, c)
	}
	// Draw the bad ones first, then the rest in time order, while the budget lasts.
	order := make([]int, len(merged))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return merged[order[i]].bad && !merged[order[j]].bad })
	spent, drawn := 0, 0
	for _, i := range order {
		cost := r.windowCost(merged[i])
		if drawn == maxWindows || spent+cost > windowBudget {
			continue
		}
		merged[i].drawn = true
		spent += cost
		drawn++
	}
	n := 0
	for i := range merged {
		if merged[i].drawn {
			n++
			merged[i].id = fmt.Sprintf("window-%d", n)
		}
	}
	return merged
}

// windowCost estimates the elements a window draws: each hold in it brings a wait and two
// accesses, each with a mark per register.
func (r *run) windowCost(w window) int {
	i := sort.Search(len(r.holds), func(i int) bool { return r.holds[i].End >= w.from })
	n := 0
	for ; i < len(r.holds) && r.holds[i].Start <= w.to; i++ {
		n++
	}
	regs := max(len(r.judged.Verdict.Registers), 1)
	return 10 + n*(2+2*regs)
}

// inWindow tells whether t falls in a window that is drawn.
func (r *run) inWindow(t int64) bool {
	for _, w := range r.windows {
		if w.drawn && t >= w.from && t <= w.to {
			return true
		}
	}
	return false
}

// windowAt is the id of the drawn window that contains [a, b], if any.
func (r *run) windowAt(a, b int64) string {
	for _, w := range r.windows {
		if w.drawn && a <= w.to && b >= w.from {
			return w.id
		}
	}
	return ""
}
