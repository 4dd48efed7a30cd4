package checker

import (
	"sort"
	"time"
)

// mutualExclusion finds every maximal window in which two clients both believed they held the lock
// (two readers of a read/write lock may; a reader with a writer, or two writers, may not).
func (l *Log) mutualExclusion(holds []interval, runStart int64) MutualExclusion {
	windows := pairOverlaps(holds, l.str)
	if windows == nil {
		windows = []Overlap{} // "windows": [] rather than null in verdict.json
	}
	for i := range windows {
		windows[i].Offset = time.Duration(windows[i].Start - runStart)
	}
	return MutualExclusion{Holds: len(windows) == 0, Windows: windows, TotalOverlap: unionLength(windows)}
}

// pairOverlaps intersects the holds of every two different clients. A client's own holds never
// overlap, so the windows of one pair are disjoint; touching ones are merged into one.
func pairOverlaps(holds []interval, name func(int32) string) []Overlap {
	hs := append([]interval(nil), holds...)
	sort.Slice(hs, func(i, j int) bool { return hs[i].start < hs[j].start })
	var raw []Overlap
	var active []interval // holds that may still overlap the next one
	for _, h := range hs {
		kept := active[:0]
		for _, a := range active {
			if a.end <= h.start {
				continue // ended before h and every later hold starts
			}
			kept = append(kept, a)
			if a.client == h.client || (a.shared && h.shared) {
				continue
			}
			if end := min(a.end, h.end); end > h.start {
				raw = append(raw, Overlap{Clients: pair(name(a.client), name(h.client)), Start: h.start, Length: time.Duration(end - h.start)})
			}
		}
		active = append(kept, h)
	}
	// Merge touching windows of the same pair.
	sort.Slice(raw, func(i, j int) bool {
		if raw[i].Clients != raw[j].Clients {
			return lessPair(raw[i].Clients, raw[j].Clients)
		}
		return raw[i].Start < raw[j].Start
	})
	var out []Overlap
	for _, w := range raw {
		if n := len(out); n > 0 && out[n-1].Clients == w.Clients && w.Start <= out[n-1].Start+int64(out[n-1].Length) {
			last := &out[n-1]
			last.Length = time.Duration(max(last.Start+int64(last.Length), w.Start+int64(w.Length)) - last.Start)
			continue
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// unionLength measures the time covered by at least one window: the time at least two clients
// held the lock at once.
func unionLength(windows []Overlap) time.Duration {
	ws := append([]Overlap(nil), windows...)
	sort.Slice(ws, func(i, j int) bool { return ws[i].Start < ws[j].Start })
	var total time.Duration
	var curStart, curEnd int64
	for i, w := range ws {
		end := w.Start + int64(w.Length)
		if i == 0 || w.Start > curEnd {
			total += time.Duration(curEnd - curStart)
			curStart, curEnd = w.Start, end
			continue
		}
		curEnd = max(curEnd, end)
	}
	return total + time.Duration(curEnd-curStart)
}

func pair(a, b string) [2]string {
	if LessClient(b, a) {
		return [2]string{b, a}
	}
	return [2]string{a, b}
}

func lessPair(a, b [2]string) bool {
	if a[0] != b[0] {
		return LessClient(a[0], b[0])
	}
	return LessClient(a[1], b[1])
}
