package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
)

// headline is the verdict in a few words, and how alarming it is.
type headline struct {
	Text  string
	Class string // "unsafe", "safe", "unknown"
}

func verdictHeadline(v checker.Verdict) headline {
	if !v.MutualExclusion.Holds {
		return headline{"Unsafe: two clients believed they held the lock at the same time", "unsafe"}
	}
	for _, r := range v.Registers {
		if r.Applicable && (r.Linearizable == checker.No || (r.LostUpdatesKnown && r.LostUpdates > 0)) {
			return headline{"Unsafe: the protected data lost updates", "unsafe"}
		}
	}
	if v.Liveness.Stuck {
		return headline{"Safe, but the lock got stuck", "unknown"}
	}
	return headline{"Safe: mutual exclusion held and no update was lost", "safe"}
}

// sentences says the verdict in words, one fact per sentence: who overlapped and for how long,
// what each register lost or rejected, how available the lock was.
func sentences(v checker.Verdict) []string {
	var out []string
	out = append(out, overlapSentences(v.MutualExclusion)...)
	names := make([]string, 0, len(v.Registers))
	for n := range v.Registers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, registerSentence(n, v.Registers[n]))
	}
	return append(out, livenessSentence(v.Liveness))
}

func overlapSentences(m checker.MutualExclusion) []string {
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
		s := fmt.Sprintf("%s and %s both believed they held the lock for %s", p.pair[0], p.pair[1], checker.Human(p.total))
		if p.windows > 1 {
			s += fmt.Sprintf(" in %d windows, the first", p.windows)
		}
		out = append(out, s+fmt.Sprintf(" at %s.", seconds(p.first)))
	}
	if len(pairs) > 1 {
		out = append(out, fmt.Sprintf("In all, at least two clients held the lock at once for %s.", checker.Human(m.TotalOverlap)))
	}
	return out
}

func registerSentence(name string, r checker.RegisterVerdict) string {
	if !r.Applicable {
		return fmt.Sprintf("%s was not used: the lock hands out no fencing token.", name)
	}
	var facts []string
	switch {
	case !r.LostUpdatesKnown:
		facts = append(facts, "its final value was never read")
	case r.LostUpdates > 0:
		facts = append(facts, fmt.Sprintf("lost %s (%d acknowledged, final value %d)", count(r.LostUpdates, "update"), r.AckedIncrements, deref(r.Final)))
	default:
		facts = append(facts, "lost nothing")
	}
	if r.WritesRejected > 0 || r.ReadsRejected > 0 {
		facts = append(facts, "rejected "+rejections(r))
	}
	if r.WritesUnknown > 0 {
		facts = append(facts, count(r.WritesUnknown, "write")+" of unknown outcome")
	}
	lin := map[string]string{
		checker.Yes: "stayed linearizable",
		checker.No:  "was not linearizable",
	}[r.Linearizable]
	if lin == "" {
		lin = "could not be judged for linearizability in time"
	}
	return fmt.Sprintf("%s %s, and %s.", name, strings.Join(facts, ", "), lin)
}

func rejections(r checker.RegisterVerdict) string {
	var parts []string
	if r.WritesRejected > 0 {
		parts = append(parts, count(r.WritesRejected, "stale write"))
	}
	if r.ReadsRejected > 0 {
		parts = append(parts, count(r.ReadsRejected, "stale read"))
	}
	return strings.Join(parts, " and ")
}

func livenessSentence(l checker.Liveness) string {
	if l.Acquisitions == 0 {
		return "No client ever acquired the lock."
	}
	s := fmt.Sprintf("%s (%s); acquire latency p50 %s, p99 %s; the longest time someone waited while nobody held the lock was %s",
		count(l.Acquisitions, "acquisition"), count(l.AcquireFailures, "failed attempt"),
		checker.Human(l.AcquireLatencyP50), checker.Human(l.AcquireLatencyP99), checker.Human(l.LongestUnavailable))
	if l.LongestUnavailable > 0 {
		s += " at " + seconds(l.LongestUnavailableOffset)
	}
	if l.Stuck {
		return s + fmt.Sprintf(". The lock was stuck: nobody could take it for the last %s.", checker.Human(l.StuckFor))
	}
	return s + "."
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// seconds is an offset from the run's start: "1.52 s".
func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
