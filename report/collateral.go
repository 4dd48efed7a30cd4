package report

import (
	"sort"
	"strconv"

	"github.com/lockcheck/lockcheck/checker"
)

// collateralRow is one harmed client's line of the report's collateral-damage table.
type collateralRow struct {
	Client                  string
	FailedReleases, Refused int
	Class                   string // "bad": every row is a harmed client
}

// collateralRows lists the clients that failed to release or were refused by fencing while they
// held the lock by every record; none when nobody was.
func collateralRows(c checker.Collateral) []collateralRow {
	clients := map[string]bool{}
	for name := range c.FailedByClient {
		clients[name] = true
	}
	for name := range c.RejectedByClient {
		clients[name] = true
	}
	var rows []collateralRow
	for name := range clients {
		rows = append(rows, collateralRow{Client: name, FailedReleases: c.FailedByClient[name], Refused: c.RejectedByClient[name], Class: "bad"})
	}
	sort.Slice(rows, func(i, j int) bool { return checker.LessClient(rows[i].Client, rows[j].Client) })
	return rows
}

// collateralTotal is the section's line in words, with the first token anomaly when there is one.
func collateralTotal(c checker.Collateral) string {
	s := c.Words()
	if c.UncertainRejections > 0 {
		s += "; " + strconv.Itoa(
			c.UncertainRejections,
		) + " refused access(es) of uncertain standing (a fault touched the holder or a lock node after it began acquiring), not counted"
	}
	if a := c.FirstAnomaly; a != nil {
		s += "; first token anomaly: " + a.Client + " took token " + strconv.FormatInt(a.Token, 10) + " at " + checker.Seconds(a.Offset) +
			", after " + a.Earlier + " took " + strconv.FormatInt(a.EarlierToken, 10) + " at " + checker.Seconds(a.EarlierOffset)
	}
	return s + "."
}
