package report

import (
	"fmt"

	"github.com/lockcheck/lockcheck/checker"
)

// fairnessRow is one client's line of the report's clients table: its share of the lock
// (checker.ClientLiveness) and how it fared in line (checker.ClientFairness).
type fairnessRow struct {
	Client                            string
	Acquisitions, Overtaken, Overtook int
	Unfairly                          string // overtakes that broke a promise of first come, first served; "" when none was made
	WorstWait, PassedOver, Starved    string
	Class                             string // "bad" for a starved client, one overtaken unfairly, or the one that waited longest when others overtook it
}

// fairnessRows is the verdict's per-client figures; none when nobody acquired.
func fairnessRows(v checker.Verdict) []fairnessRow {
	f := v.Fairness
	if f.Acquisitions == 0 {
		return nil
	}
	live := map[string]checker.ClientLiveness{}
	for _, c := range v.Liveness.Clients {
		live[c.Client] = c
	}
	var rows []fairnessRow
	for _, c := range f.Clients {
		row := fairnessRow{Client: c.Client, Acquisitions: c.Acquisitions, Overtaken: c.Overtaken, Overtook: c.Overtook,
			WorstWait: checker.Human(c.WorstWait), PassedOver: "-", Starved: "no"}
		if f.Promised {
			row.Unfairly = fmt.Sprint(c.OvertakenUnfairly)
		}
		l := live[c.Client]
		if p := l.PassedOver; p.Length > 0 {
			row.PassedOver = fmt.Sprintf("%s from %s (%d of others)", checker.Human(p.Length), checker.Seconds(p.Offset), p.By)
		}
		if st := l.Starved; st != nil {
			row.Starved = "YES, " + checker.Human(st.Length)
			if !st.Served {
				row.Starved += ", " + checker.Unserved(c.Acquisitions)
			}
		}
		if (c.Client == f.WorstWaitClient && c.Overtaken > 0) || l.Starved != nil || (f.Promised && c.OvertakenUnfairly > 0) {
			row.Class = "bad"
		}
		rows = append(rows, row)
	}
	return rows
}

// fairnessTotal is the table's last line.
func fairnessTotal(v checker.Verdict) string {
	f, l := v.Fairness, v.Liveness
	if f.Acquisitions == 0 {
		return ""
	}
	s := fmt.Sprintf(
		"%d of %d acquisitions overtook someone (%.0f per 1,000), %d overtakes in all",
		f.Overtaking,
		f.Acquisitions,
		f.PerThousand(),
		f.Overtakes,
	)
	if f.Promised {
		s += fmt.Sprintf("; the design promises first come, first served: %d unfair", f.Unfair)
	}
	s += fmt.Sprintf(
		". A client is starved when passed over for longer than %s by at least %d acquisitions of others; askers were refused %.0f%% of the run",
		checker.Human(l.StarvedAfter),
		l.StarvedBy,
		100*l.RefusedShare,
	)
	if l.BarelyServed {
		s += fmt.Sprintf(", more than the %.0f%% allowed: the lock barely served", 100*l.RefusedLimit)
	}
	return s
}
