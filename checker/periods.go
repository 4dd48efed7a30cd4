package checker

import "sort"

// period is a stretch of time [from, to), CLOCK_MONOTONIC nanoseconds.
type period struct{ from, to int64 }

func (s period) empty() bool { return s.to <= s.from }

// periods is a set of moments: disjoint, non-empty periods in time order.
type periods []period

// union is every moment of the periods given, in any order, empty ones included.
func union(in ...period) periods {
	var ss []period
	for _, s := range in {
		if !s.empty() {
			ss = append(ss, s)
		}
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].from < ss[j].from })
	var out periods
	for _, s := range ss {
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// intersect is the moments in both a and b.
func (a periods) intersect(b periods) periods {
	var out periods
	for i, j := 0, 0; i < len(a) && j < len(b); {
		if s := (period{max(a[i].from, b[j].from), min(a[i].to, b[j].to)}); !s.empty() {
			out = append(out, s)
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

// minus is the moments of a not in b.
func (a periods) minus(b periods) periods {
	var out periods
	j := 0
	for _, s := range a {
		for j < len(b) && b[j].to <= s.from {
			j++
		}
		from := s.from
		for k := j; k < len(b) && b[k].from < s.to; k++ {
			if b[k].from > from {
				out = append(out, period{from, b[k].from})
			}
			from = max(from, b[k].to)
		}
		if from < s.to {
			out = append(out, period{from, s.to})
		}
	}
	return out
}

// covers reports whether t lies in one of the periods.
func (a periods) covers(t int64) bool {
	i := sort.Search(len(a), func(i int) bool { return a[i].to > t })
	return i < len(a) && a[i].from <= t
}
