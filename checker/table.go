package checker

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Table prints the verdict as a short terminal table: mutual exclusion, one row per register,
// and liveness. Sections are separated by blank lines, each aligned on its own.
func Table(v Verdict, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if v.Unexercised != "" {
		// First: every row below is what the lock did without meeting its fault.
		fmt.Fprintf(tw, "FAULT NOT EXERCISED\t%s\n\n", v.Unexercised)
	}
	fmt.Fprintf(tw, "mutual exclusion\t%s\n", mutualExclusionCell(v.MutualExclusion))
	for _, line := range whyLines(v.MutualExclusion) {
		fmt.Fprintf(tw, "\t%s\n", line)
	}
	fmt.Fprintln(tw)

	fmt.Fprintln(tw, "register\tlinearizable\tlost updates\tacked\trejected\tfinal")
	var notApplicable []string
	for _, name := range sortedNames(v.Registers) {
		r := v.Registers[name]
		if !r.Applicable {
			notApplicable = append(notApplicable, name) // printed last: a short row would break the columns
			continue
		}
		lost := "?"
		if r.LostUpdatesKnown {
			lost = strconv.Itoa(r.LostUpdates)
		}
		final := "-"
		if r.Final != nil {
			final = strconv.FormatInt(*r.Final, 10)
			if r.FinalBelowInitial > 0 {
				final += fmt.Sprintf(" (%d below the initial %d)", r.FinalBelowInitial, *r.Final+r.FinalBelowInitial)
			}
		}
		rejected := strconv.Itoa(r.Rejected())
		switch {
		case r.LegitRejected > 0 && r.UncertainRejected > 0:
			rejected += fmt.Sprintf(" (%d rightful, %d uncertain)", r.LegitRejected, r.UncertainRejected)
		case r.LegitRejected > 0:
			rejected += fmt.Sprintf(" (%d rightful)", r.LegitRejected)
		case r.UncertainRejected > 0:
			rejected += fmt.Sprintf(" (%d uncertain)", r.UncertainRejected)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", name, r.Linearizable, lost, r.AckedIncrements, rejected, final)
	}
	for _, name := range notApplicable {
		fmt.Fprintf(tw, "%s\tn/a (%s)\n", name, NotApplicableWhy(name))
	}

	l := v.Liveness
	stuck := "no"
	if l.Stuck {
		stuck = "YES, for " + Human(l.StuckFor)
	}
	fmt.Fprintln(tw, "\nliveness\tacquisitions\tfailures\tp50\tp99\tlongest unavailable\trefused\tstuck")
	failures := strconv.Itoa(l.AcquireFailures)
	if l.AcquireUnknown > 0 {
		failures += fmt.Sprintf(" (+%d unknown)", l.AcquireUnknown)
	}
	refusedCell := fmt.Sprintf("%.0f%%", 100*l.RefusedShare)
	if l.BarelyServed {
		refusedCell = fmt.Sprintf("%.0f%%, BARELY SERVED (over %.0f%%)", 100*l.RefusedShare, 100*l.RefusedLimit)
	}
	fmt.Fprintf(tw, "\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Acquisitions, failures,
		Human(l.AcquireLatencyP50), Human(l.AcquireLatencyP99), Human(l.LongestUnavailable), refusedCell, stuck)
	if l.Acquisitions > 0 && len(l.Clients) > 0 {
		fmt.Fprintf(tw, "\nclient\tacquisitions\tlongest passed over\tstarved (over %s, by %d or more)\n", Human(l.StarvedAfter), l.StarvedBy)
		for _, c := range l.Clients {
			starved := "no"
			if c.Starved != nil {
				starved = "YES: " + stretchCell(*c.Starved, c.Acquisitions)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", c.Client, c.Acquisitions, stretchCell(c.PassedOver, c.Acquisitions), starved)
		}
	}
	if c := v.Collateral; c.Damaged() {
		fmt.Fprintln(tw, "\ncollateral\tfailed releases\trightful accesses refused\ttoken anomalies")
		fmt.Fprintf(tw, "\t%s\t%s\t%s\n", countByClient(c.FailedReleases, c.FailedByClient),
			countByClient(c.LegitRejections, c.RejectedByClient), tokenCell(c))
	}
	if f := v.Fairness; f.Acquisitions > 0 {
		overtakes, overtaking, worst := fairnessCells(f)
		if f.Promised {
			fmt.Fprintln(tw, "\nfairness\tovertakes\tunfair (first come, first served promised)\tovertaking acquisitions\tworst wait")
			fmt.Fprintf(tw, "\t%s\t%d\t%s\t%s\n", overtakes, f.Unfair, overtaking, worst)
		} else {
			fmt.Fprintln(tw, "\nfairness\tovertakes\tovertaking acquisitions\tworst wait")
			fmt.Fprintf(tw, "\t%s\t%s\t%s\n", overtakes, overtaking, worst)
		}
	}
	return tw.Flush()
}

// NotApplicableWhy says what the lock lacked for a register no client could touch: the resource's
// cas-random register needs the lock's random value (A4), every other checked register a token.
// The table, the sentences and the report all say it in these words.
func NotApplicableWhy(register string) string {
	if register == "cas-random" {
		return "lock has no random value"
	}
	return "lock has no fencing token"
}

// whyLines say why the windows of double ownership happened, class by class, most serious first,
// with the first window of each class as the example.
func whyLines(m MutualExclusion) []string {
	var out []string
	for i := len(WindowClasses) - 1; i >= 0; i-- {
		c := WindowClasses[i]
		n := 0
		var first *Overlap
		for k, w := range m.Windows {
			if w.Class == c {
				if n == 0 {
					first = &m.Windows[k]
				}
				n++
			}
		}
		if n == 0 {
			continue
		}
		of := "every window"
		if n < len(m.Windows) {
			of = fmt.Sprintf("%d of %d windows", n, len(m.Windows))
		}
		out = append(out, fmt.Sprintf("%s: %s; e.g. at %s, %s", of, classPhrase[c], Seconds(first.Offset), first.Why))
	}
	return out
}

func mutualExclusionCell(m MutualExclusion) string {
	if m.Holds {
		return "holds"
	}
	return "VIOLATED: " + mutualExclusionWords(m)
}

// countByClient is a count with its clients: "3 (client-1 2, client-2 1)".
func countByClient(n int, by map[string]int) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", n, perClient(by))
}

func tokenCell(c Collateral) string {
	switch {
	case c.TokenAnomalies == 0:
		return "0"
	case c.SameToken > 0 && c.LowerToken > 0:
		return fmt.Sprintf("%d (%d same, %d lower)", c.TokenAnomalies, c.SameToken, c.LowerToken)
	case c.SameToken > 0:
		return fmt.Sprintf("%d (same token)", c.TokenAnomalies)
	}
	return fmt.Sprintf("%d (lower token)", c.TokenAnomalies)
}

// stretchCell is a passed-over stretch of a client that acquired the lock acquisitions times in
// the run, in a few words: "6.85s from 1.43 s, 56 acquisitions of others, never served"; "-" for
// none.
func stretchCell(st Stretch, acquisitions int) string {
	if st.Length == 0 {
		return "-"
	}
	s := fmt.Sprintf("%s from %s, %s of others", Human(st.Length), Seconds(st.Offset), plural(st.By, "acquisition"))
	if !st.Served {
		s += ", " + Unserved(acquisitions)
	}
	return s
}

// Unserved says that a client's last wait ended unserved (the run ended, or the client died,
// first): "never served" only when the client never held the lock in the run; one that did was
// "not served again".
func Unserved(acquisitions int) string {
	if acquisitions == 0 {
		return "never served"
	}
	return "not served again"
}
