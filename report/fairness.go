package report

import (
	"fmt"

	"github.com/lockcheck/lockcheck/checker"
)

// fairnessRow is one client's line of the report's fairness table.
type fairnessRow struct {
	Client                            string
	Acquisitions, Overtaken, Overtook int
	WorstWait                         string
	Class                             string // "bad" for the client that waited longest, when others overtook it
}

// fairnessRows is the verdict's fairness figure per client; none when nobody acquired.
func fairnessRows(f checker.Fairness) []fairnessRow {
	if f.Acquisitions == 0 {
		return nil
	}
	var rows []fairnessRow
	for _, c := range f.Clients {
		row := fairnessRow{Client: c.Client, Acquisitions: c.Acquisitions, Overtaken: c.Overtaken, Overtook: c.Overtook,
			WorstWait: checker.Human(c.WorstWait)}
		if c.Client == f.WorstWaitClient && c.Overtaken > 0 {
			row.Class = "bad"
		}
		rows = append(rows, row)
	}
	return rows
}

// fairnessTotal is the table's last line.
func fairnessTotal(f checker.Fairness) string {
	if f.Acquisitions == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d acquisitions overtook someone (%.0f per 1,000), %d overtakes in all",
		f.Overtaking, f.Acquisitions, f.PerThousand(), f.Overtakes)
}
