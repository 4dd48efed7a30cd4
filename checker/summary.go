package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// summarize says the verdict in one line of words, for logs, reports and CI output.
func summarize(v Verdict) string {
	parts := []string{mutualExclusionWords(v.MutualExclusion)}
	for _, name := range sortedNames(v.Registers) {
		if r := v.Registers[name]; r.Applicable {
			parts = append(parts, registerWords(name, r))
		}
	}
	if v.Collateral.Damaged() {
		parts = append(parts, "collateral damage: "+damageWords(v.Collateral))
	}
	parts = append(parts, livenessWords(v.Liveness))
	if w := fairnessWords(v.Fairness); w != "" {
		parts = append(parts, w)
	}
	if v.Lease != nil {
		if w := v.Lease.Words(); w != "" {
			parts = append(parts, w)
		}
	}
	if s := v.Scheduling; s != nil {
		parts = append(parts, fmt.Sprintf("the machine woke %s %s late at %s (%d late wake-up(s) outside faults)",
			s.Client, s.Worst.Round(time.Millisecond), s.Offset.Round(time.Millisecond), s.Wakes))
	}
	return strings.Join(parts, "; ")
}

func mutualExclusionWords(m MutualExclusion) string {
	if m.Holds {
		return "mutual exclusion held"
	}
	perPair := map[[2]string]time.Duration{}
	var pairs [][2]string
	for _, w := range m.Windows {
		if _, seen := perPair[w.Clients]; !seen {
			pairs = append(pairs, w.Clients)
		}
		perPair[w.Clients] += w.Length
	}
	if len(pairs) == 1 {
		p := pairs[0]
		s := fmt.Sprintf("%s and %s both believed they held the lock for %s", p[0], p[1], Human(perPair[p]))
		if n := len(m.Windows); n > 1 {
			s += fmt.Sprintf(" (%d windows)", n)
		}
		return s
	}
	longest := pairs[0]
	for _, p := range pairs {
		if perPair[p] > perPair[longest] {
			longest = p
		}
	}
	return fmt.Sprintf("%d pairs of clients both believed they held the lock, %s in total (longest: %s and %s, %s)",
		len(pairs), Human(m.TotalOverlap), longest[0], longest[1], Human(perPair[longest]))
}

func registerWords(name string, r RegisterVerdict) string {
	var facts []string
	if r.LostUpdatesKnown && r.LostUpdates > 0 {
		facts = append(facts, "lost "+plural(r.LostUpdates, "update"))
	}
	if r.FinalBelowInitial > 0 {
		facts = append(facts, fmt.Sprintf("ended %d below its initial value", r.FinalBelowInitial))
	}
	if w := rejectedWords(r); w != "" {
		facts = append(facts, "rejected "+w)
	}
	var lin string
	switch r.Linearizable {
	case Yes:
		lin = "stayed linearizable"
	case No:
		lin = "was not linearizable"
	default:
		lin = "linearizability unknown (checker ran out of time)"
	}
	if len(facts) == 0 {
		return name + " " + lin
	}
	return name + " " + strings.Join(facts, ", ") + " and " + lin
}

func livenessWords(l Liveness) string {
	switch {
	case l.Stuck:
		return "the lock was stuck for " + Human(l.StuckFor) + " at the end"
	case l.Acquisitions == 0:
		return "no client ever acquired the lock"
	}
	s := fmt.Sprintf("%s, p99 %s", plural(l.Acquisitions, "acquisition"), Human(l.AcquireLatencyP99))
	if l.Starving() {
		s += "; " + starvedWords(l)
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	if strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ay") && !strings.HasSuffix(noun, "ey") {
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Human rounds a duration to three significant figures or so, for reports: "1.21s", "12.3ms".
func Human(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(100 * time.Nanosecond).String()
	}
	return d.String()
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// uncertainWhy says why an uncertain rejection is neither rightful nor stale.
const uncertainWhy = "a fault touched its holder or a lock node after it began acquiring"

// rejectedWords counts a register's refused accesses by the standing of their clients: "1 stale
// access, 1 rightful access and 1 uncertain access (...)"; "" when it refused none.
func rejectedWords(r RegisterVerdict) string {
	var parts []string
	if n := r.StaleRejected(); n > 0 {
		parts = append(parts, plural(n, "stale access"))
	}
	if n := r.LegitRejected; n > 0 {
		parts = append(parts, plural(n, "rightful access"))
	}
	if n := r.UncertainRejected; n > 0 {
		parts = append(parts, plural(n, "uncertain access")+" ("+uncertainWhy+")")
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
