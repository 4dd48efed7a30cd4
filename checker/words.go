package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Sentences says the verdict in words, one fact per sentence: who overlapped and for how long,
// what each register lost or rejected, how available the lock was.
func Sentences(v Verdict) []string {
	var out []string
	out = append(out, overlapSentences(v.MutualExclusion)...)
	if s := overlapRateSentence(v); s != "" {
		out = append(out, s)
	}
	names := make([]string, 0, len(v.Registers))
	for n := range v.Registers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, registerSentence(n, v.Registers[n]))
	}
	out = append(out, collateralSentences(v.Collateral)...)
	out = append(out, livenessSentence(v.Liveness))
	out = append(out, clientSentences(v.Liveness)...)
	if s := fairnessSentence(v.Fairness); s != "" {
		out = append(out, s)
	}
	return out
}

// starvedWords is how the lock failed to serve, in a few words: "client-1 starved (passed over
// 6.85s, never served)", "askers refused 83% of the run".
func starvedWords(l Liveness) string {
	var parts []string
	for _, c := range l.Clients {
		if c.Starved != nil {
			s := fmt.Sprintf("%s starved (passed over %s", c.Client, Human(c.Starved.Length))
			if !c.Starved.Served {
				s += ", " + Unserved(c.Acquisitions)
			}
			parts = append(parts, s+")")
		}
	}
	if l.BarelyServed {
		parts = append(parts, fmt.Sprintf("askers refused %.0f%% of the run", 100*l.RefusedShare))
	}
	return strings.Join(parts, ", ")
}

// clientSentences say each client's share of the lock: who was starved (or passed over longest),
// and how much of the run askers were refused.
func clientSentences(l Liveness) []string {
	if l.Acquisitions == 0 {
		return nil
	}
	var out []string
	bound := fmt.Sprintf("a client is starved when passed over for longer than %s by at least %s of others", Human(l.StarvedAfter),
		plural(l.StarvedBy, "acquisition"))
	for _, c := range l.Clients {
		st := c.Starved
		if st == nil {
			continue
		}
		s := fmt.Sprintf("%s was starved: it asked for the lock in vain for %s from %s while other clients got it %s",
			c.Client, Human(st.Length), Seconds(st.Offset), plural(st.By, "time"))
		if st.Served {
			s += ", and got it only then"
		} else {
			s += ", and never got it again"
		}
		out = append(out, s+" ("+bound+").")
	}
	if len(out) == 0 {
		if w := l.LongestPassedOver(); w.PassedOver.Length > 0 {
			p := w.PassedOver
			out = append(
				out,
				fmt.Sprintf(
					"No client was starved (%s): the longest stretch any client was passed over was %s's, %s from %s, while others got the lock %s.",
					bound,
					w.Client,
					Human(p.Length),
					Seconds(p.Offset),
					plural(p.By, "time"),
				),
			)
		}
	}
	s := fmt.Sprintf(
		"Askers were refused %.0f%% of the run (%s in which someone asked and nobody held the lock, in stretches over half a second, faults "+
			"on servers left out)",
		100*l.RefusedShare,
		Human(l.Refused),
	)
	if l.BarelyServed {
		s = fmt.Sprintf(
			"The lock barely served: askers were refused %.0f%% of the run, more than the %.0f%% allowed (%s in which someone asked and "+
				"nobody held the lock, in stretches over half a second, faults on servers left out)",
			100*l.RefusedShare,
			100*l.RefusedLimit,
			Human(l.Refused),
		)
	}
	return append(out, s+".")
}

func overlapSentences(m MutualExclusion) []string {
	if m.Holds {
		return []string{"No two clients ever believed they held the lock at the same time."}
	}
	type pairTotal struct {
		pair    [2]string
		total   time.Duration
		windows int
		first   time.Duration
	}
	var pairs []*pairTotal
	byPair := map[[2]string]*pairTotal{}
	for _, w := range m.Windows {
		p := byPair[w.Clients]
		if p == nil {
			p = &pairTotal{pair: w.Clients, first: w.Offset}
			byPair[w.Clients] = p
			pairs = append(pairs, p)
		}
		p.total += w.Length
		p.windows++
	}
	var out []string
	for _, p := range pairs {
		s := fmt.Sprintf("%s and %s both believed they held the lock for %s", p.pair[0], p.pair[1], Human(p.total))
		if p.windows > 1 {
			s += fmt.Sprintf(" in %d windows, the first", p.windows)
		}
		out = append(out, s+fmt.Sprintf(" at %s.", Seconds(p.first)))
	}
	if len(pairs) > 1 {
		out = append(out, fmt.Sprintf("In all, at least two clients held the lock at once for %s.", Human(m.TotalOverlap)))
	}
	return append(out, classSentences(m)...)
}

// classSentences say why the windows happened, a sentence per class, most serious first, with its
// first window as the example.
func classSentences(m MutualExclusion) []string {
	var out []string
	for i := len(WindowClasses) - 1; i >= 0; i-- {
		c := WindowClasses[i]
		n, first := 0, -1
		for k, w := range m.Windows {
			if w.Class == c {
				if n++; first < 0 {
					first = k
				}
			}
		}
		if n == 0 {
			continue
		}
		w := m.Windows[first]
		s := fmt.Sprintf("%s: %s", capitalized(ClassMeaning(c, n, len(m.Windows))), w.Why)
		if n > 1 {
			s = fmt.Sprintf("%s. The first, at %s (%s and %s): %s", capitalized(ClassMeaning(c, n, len(m.Windows))), Seconds(w.Offset),
				w.Clients[0], w.Clients[1], w.Why)
		}
		out = append(out, s+".")
	}
	return out
}

// ClassMeaning says how many of the windows have class c and what that means: "1 window: the
// lock broke its promise", "every window (12): a holder outlived its promise (K2)".
func ClassMeaning(c WindowClass, n, of int) string {
	what := map[WindowClass]string{
		ClassBroken:    "the lock broke its promise: it told two clients they held it at the same time, and no fault on its servers explains it",
		ClassExplained: "a fault on the lock's servers explains it (a documented weakness of the design)",
		ClassOutlived:  "a holder outlived its promise (K2): it acted after its lease had run out, the limit fencing is for",
	}[c]
	switch {
	case n == of && n == 1:
		return "the window: " + what
	case n == of:
		return fmt.Sprintf("every window (%d): %s", n, what)
	}
	return fmt.Sprintf("%d of %d windows: %s", n, of, what)
}

func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func registerSentence(name string, r RegisterVerdict) string {
	if !r.Applicable {
		return fmt.Sprintf("%s was not used: the %s.", name, NotApplicableWhy(name))
	}
	var facts []string
	switch {
	case !r.LostUpdatesKnown:
		facts = append(facts, "its final value was never read")
	case r.LostUpdates > 0:
		applied := fmt.Sprintf("%d acknowledged", r.AckedIncrements)
		if r.LandedUnknown > 0 {
			applied += fmt.Sprintf(" and %d its client never heard back about, which the resource's log shows applied", r.LandedUnknown)
		}
		facts = append(facts, fmt.Sprintf("lost %s (%s, final value %d)", plural(r.LostUpdates, "update"), applied, deref(r.Final)))
	default:
		facts = append(facts, "lost nothing")
	}
	if r.WritesRejected > 0 || r.ReadsRejected > 0 {
		f := "rejected " + rejections(r)
		var of []string
		if r.LegitRejected > 0 {
			of = append(of, fmt.Sprintf("%d from clients that held the lock by every record", r.LegitRejected))
		}
		if r.UncertainRejected > 0 {
			of = append(of, fmt.Sprintf("%d uncertain: %s", r.UncertainRejected, uncertainWhy))
		}
		if len(of) > 0 {
			f += " (of them " + strings.Join(of, "; ") + ")"
		}
		facts = append(facts, f)
	}
	if r.WritesUnknown > 0 {
		facts = append(facts, plural(r.WritesUnknown, "write")+" of unknown outcome")
	}
	lin := map[string]string{
		Yes: "stayed linearizable",
		No:  "was not linearizable",
	}[r.Linearizable]
	if lin == "" {
		lin = "could not be judged for linearizability in time"
	}
	return fmt.Sprintf("%s %s, and %s.", name, strings.Join(facts, ", "), lin)
}

// damageWords is the collateral damage in a few words: "2 failed releases, 3 rightful accesses
// refused by fencing, 1 token anomaly".
func damageWords(c Collateral) string {
	var parts []string
	if c.FailedReleases > 0 {
		parts = append(parts, plural(c.FailedReleases, "failed release"))
	}
	if c.LegitRejections > 0 {
		parts = append(parts, plural(c.LegitRejections, "rightful access")+" refused by fencing")
	}
	if c.TokenAnomalies > 0 {
		s := plural(c.TokenAnomalies, "token anomaly")
		switch {
		case c.SameToken > 0 && c.LowerToken > 0:
			s += fmt.Sprintf(" (%d same token, %d lower token)", c.SameToken, c.LowerToken)
		case c.SameToken > 0:
			s += " (same token as an earlier holder)"
		default:
			s += " (lower token than an earlier holder)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// collateralSentences say the harm done to legitimate holders (Collateral), one kind per
// sentence; nothing when there was none.
func collateralSentences(c Collateral) []string {
	var out []string
	if c.FailedReleases > 0 {
		s := fmt.Sprintf("%s could not give the lock back while holding it by every record: %s (%s)",
			clientsWord(c.FailedByClient), plural(c.FailedReleases, "failed release"), perClient(c.FailedByClient))
		if f := c.FirstFailedRelease; f != nil {
			s += fmt.Sprintf(", the first by %s at %s", f.Client, Seconds(f.Offset))
		}
		out = append(out, s+".")
	}
	if c.UnknownReleases > 0 {
		out = append(out, fmt.Sprintf("%s by clients that held the lock by every record ended with the outcome unknown (a timeout); they may have "+
			"freed it, so they are not counted as failed.",
			plural(c.UnknownReleases, "release")))
	}
	if c.LegitRejections > 0 {
		s := fmt.Sprintf("Fencing refused %s of clients that held the lock by every record (%s)",
			plural(c.LegitRejections, "access"), perClient(c.RejectedByClient))
		if f := c.FirstRejection; f != nil {
			s += fmt.Sprintf(", the first a %s of %s by %s at %s", f.Op, f.Register, f.Client, Seconds(f.Offset))
		}
		out = append(out, s+": the tokens did not follow the order in which clients held the lock.")
	}
	if c.UncertainRejections > 0 {
		s := fmt.Sprintf("Fencing also refused %s of clients that held the lock by every record but one: %s (%s)",
			plural(c.UncertainRejections, "access"), uncertainWhy, perClient(c.UncertainByClient))
		if f := c.FirstUncertain; f != nil {
			s += fmt.Sprintf(", the first a %s of %s by %s at %s, after a %s", f.Op, f.Register, f.Client, Seconds(f.Offset), f.Fault)
		}
		out = append(out, s+"; whether they still held it the history cannot tell, so these are not counted as damage.")
	}
	if c.TokenAnomalies > 0 {
		s := fmt.Sprintf("%s got a fencing token that does not order it after every earlier holder", plural(c.TokenAnomalies, "hold"))
		if c.SameToken > 0 {
			s += fmt.Sprintf(" (%d the same token as an earlier hold", c.SameToken)
			if c.LowerToken > 0 {
				s += fmt.Sprintf(", %d a lower one", c.LowerToken)
			}
			s += ")"
		} else {
			s += " (a lower token than an earlier hold)"
		}
		if a := c.FirstAnomaly; a != nil {
			s += fmt.Sprintf("; the first: %s took token %d at %s, after %s took token %d at %s",
				a.Client, a.Token, Seconds(a.Offset), a.Earlier, a.EarlierToken, Seconds(a.EarlierOffset))
		}
		out = append(out, s+".")
	}
	return out
}

// perClient writes counts by client: "client-1 3, client-2 1".
func perClient(m map[string]int) string {
	names := sortedNames(m)
	sort.SliceStable(names, func(i, j int) bool { return LessClient(names[i], names[j]) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, m[n])
	}
	return strings.Join(parts, ", ")
}

func clientsWord(m map[string]int) string {
	if len(m) == 1 {
		return "A client"
	}
	return fmt.Sprintf("%d clients", len(m))
}

func rejections(r RegisterVerdict) string {
	stale := "stale "
	if r.LegitRejected > 0 || r.UncertainRejected > 0 {
		stale = "" // not all of them were stale: the sentence says how many were not
	}
	var parts []string
	if r.WritesRejected > 0 {
		parts = append(parts, plural(r.WritesRejected, stale+"write"))
	}
	if r.ReadsRejected > 0 {
		parts = append(parts, plural(r.ReadsRejected, stale+"read"))
	}
	return strings.Join(parts, " and ")
}

func livenessSentence(l Liveness) string {
	if l.Acquisitions == 0 {
		return "No client ever acquired the lock."
	}
	attempts := plural(l.AcquireFailures, "failed attempt")
	if l.AcquireUnknown > 0 {
		attempts += ", " + plural(l.AcquireUnknown, "attempt") + " of unknown outcome"
	}
	s := fmt.Sprintf("%s (%s); acquire latency p50 %s, p99 %s; the longest time someone waited while nobody held the lock was %s",
		plural(l.Acquisitions, "acquisition"), attempts,
		Human(l.AcquireLatencyP50), Human(l.AcquireLatencyP99), Human(l.LongestUnavailable))
	if l.LongestUnavailable > 0 {
		s += " at " + Seconds(l.LongestUnavailableOffset)
	}
	if l.Stuck {
		s += fmt.Sprintf(". The lock was stuck: nobody could take it for the last %s", Human(l.StuckFor))
		if len(l.StuckUnknown) > 0 {
			s += fmt.Sprintf(", and no client believed it held it: the acquire of unknown outcome of %s may have taken it",
				strings.Join(l.StuckUnknown, ", "))
		}
		return s + "."
	}
	return s + "."
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Seconds writes an offset from the run's start: "1.52 s".
func Seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// Words is the collateral damage in a few words, or "no collateral damage".
func (c Collateral) Words() string {
	if !c.Damaged() {
		return "no collateral damage"
	}
	return damageWords(c)
}
