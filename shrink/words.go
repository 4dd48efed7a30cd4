package shrink

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Describe says in words what a scenario's faults do: "client-1 paused for 1.6 TTLs (640ms)
// right after its first acquisition".
func Describe(sc *scenarios.Scenario) string {
	var out []string
	for i := 0; i < len(sc.Nemesis); i++ {
		e := sc.Nemesis[i]
		if e.Random != nil {
			out = append(out, "a random package of "+strings.Join(e.Random.Faults, ", "))
			continue
		}
		words := Fault(e.Fault, sc.TTL.D())
		if n, step := repeats(sc.Nemesis[i:]); n > 1 {
			words += fmt.Sprintf(", then again %s, %d times in all", step, n)
			i += n - 1
		}
		out = append(out, words)
	}
	if len(out) == 0 {
		return "no fault at all"
	}
	return strings.Join(out, "; ")
}

// Fault says what one planned fault does, its lengths also in TTLs when ttl is set.
func Fault(f nemesis.Fault, ttl time.Duration) string {
	who := f.Target
	switch f.Target {
	case nemesis.Holder:
		who = "the holder"
	case nemesis.Waiter:
		who = "a client waiting while another holds"
	case nemesis.Overtaken:
		who = "a client holding again after being overtaken"
	}
	long := ""
	if f.For > 0 {
		long = " for " + length(f.For.D(), ttl)
	}
	var what string
	switch p := f.Params.(type) {
	case *nemesis.ClockParams:
		step := p.Offset.D().String()
		if p.Offset > 0 {
			step = "+" + step
		}
		what = "had its clock stepped by " + step + long
		if p.Offset == 0 {
			what = fmt.Sprintf("had its clock run at rate %g%s", p.Rate, long)
		}
	case *nemesis.PartitionParams:
		what = "was cut off from " + nodes(p.Nodes) + long
	case *nemesis.DelayParams:
		what = fmt.Sprintf("had its links to %s delayed by %s%s", nodes(p.Nodes), p.Latency.D(), long)
	default:
		switch f.Kind {
		case "pause":
			what = "paused" + long
		case "kill":
			what = "was killed"
		case "crash":
			what = "crashed" + long
		case nemesis.Abandon:
			what = "gave up its acquire attempt"
		default:
			what = "took a " + f.Kind + " fault" + long
		}
	}
	when := fmt.Sprintf("%s into the run", f.At.D())
	switch {
	case nemesis.IsStep(f.Kind) && f.Point != "":
		// Told at its time, taken at the next pass of its point during an attempt.
		when = fmt.Sprintf("at its next pass of %s from %s into the run", f.Point, f.At.D())
	case f.Target == nemesis.Waiter && nemesis.IsHoldPoint(f.Point):
		// The longest waiter as a holder passes the point: the pass is the holder's.
		who = "the client that had waited longest"
		when = fmt.Sprintf("as the %s hold with a waiter behind it began", ordinal(f.Occurrence))
		if f.Point != nemesis.HoldBegins {
			when = fmt.Sprintf("as its holder passed %s (the %s such hold)", f.Point, ordinal(f.Occurrence))
		}
	case f.Point == "after-acquire":
		when = "right after its " + ordinal(f.Occurrence) + " acquisition"
	case f.Point != "":
		when = fmt.Sprintf("at its %s pass of %s", ordinal(f.Occurrence), f.Point)
	case nemesis.IsClientRole(f.Target):
		when = fmt.Sprintf("from %s into the run", f.At.D())
	}
	return who + " " + what + " " + when
}

func length(d, ttl time.Duration) string {
	if ttl <= 0 {
		return d.String()
	}
	return fmt.Sprintf("%.1f TTLs (%s)", float64(d)/float64(ttl), d)
}

func nodes(ns []string) string {
	if len(ns) == 0 {
		return "every lock node"
	}
	return strings.Join(ns, ", ")
}

func ordinal(n int) string {
	if n < 1 {
		n = 1
	}
	if n <= 5 {
		return []string{"first", "second", "third", "fourth", "fifth"}[n-1]
	}
	suffix := "th"
	if s, ok := map[int]string{1: "st", 2: "nd", 3: "rd"}[n%10]; ok && (n%100 < 11 || n%100 > 13) {
		suffix = s
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// repeats counts the entries at the head of es that are one fault repeated at a steady step (of
// passes of its point, or of time), as shrink's repeated writes them, and says the step.
func repeats(es []scenarios.Entry) (int, string) {
	if len(es) < 2 || es[0].Random != nil || es[1].Random != nil {
		return 1, ""
	}
	first, second := es[0].Fault, es[1].Fault
	dOcc, dAt := second.Occurrence-first.Occurrence, second.At-first.At
	if (dOcc > 0) == (dAt > 0) || dOcc < 0 || dAt < 0 {
		return 1, ""
	}
	n := 1
	for ; n < len(es); n++ {
		f := es[n].Fault
		want := first
		want.Occurrence += n * dOcc
		want.At += scenarios.Duration(n) * dAt
		if es[n].Random != nil || !reflect.DeepEqual(f, want) {
			break
		}
	}
	if dOcc > 0 {
		if dOcc == 1 {
			return n, "at each next pass"
		}
		return n, fmt.Sprintf("at every %s pass", ordinal(dOcc))
	}
	return n, "every " + dAt.D().String()
}
