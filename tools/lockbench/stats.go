package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// spread is min / median / max of repeated measurements.
type spread struct {
	n                int
	min, median, max float64
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{n: len(s), min: s[0], median: med, max: s[len(s)-1]}
}

// format writes "median (min–max)" with f formatting each value; one value is written alone.
func (s spread) format(f func(float64) string) string {
	switch {
	case s.n == 0:
		return "–"
	case s.n == 1 || s.min == s.max:
		return f(s.median)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.median), f(s.min), f(s.max))
}

// num writes a figure with about three significant digits.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func ratio(v float64) string { return fmt.Sprintf("%.2f×", v) }

func mb(v float64) string { return num(v) + " MB" }

func ms(v float64) string { return num(v) + " ms" }

func secs(v float64) string { return num(v) + " s" }

func dur(v float64) string { return time.Duration(v).Round(time.Millisecond).String() }

// ratios divides a[i] by b[i], round by round.
func ratios(a, b []float64) []float64 {
	var out []float64
	for i := 0; i < len(a) && i < len(b); i++ {
		if b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}
