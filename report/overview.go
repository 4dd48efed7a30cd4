package report

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
)

// The overview of a long run is drawn in the browser (assets/report.js) from the data below:
// every hold, fault and double ownership, with times in tenths of a millisecond from the run's
// start (integers: compact, and exact enough for a drawing). Zoomed out, a lane shows how much of
// each slice of time its client held the lock; zoomed in far enough to see the holds one by one,
// it draws them, with their details on hover.

type overviewData struct {
	Span     int64          `json:"span"` // the run's length, in units
	Unit     float64        `json:"unit"` // nanoseconds per unit
	Clients  []string       `json:"clients"`
	Holds    [][]int64      `json:"holds"` // per client: start, end, start, end, ...
	Overlaps [][]any        `json:"overlaps"`
	Kinds    []faultKind    `json:"kinds"`
	Faults   [][]any        `json:"faults"` // start, end, kind index, label
	Windows  [][]any        `json:"windows"`
	Counts   overviewCounts `json:"counts"`
}

type overviewCounts struct {
	Holds, Overlaps, Faults, Windows int
}

const overviewUnit = int64(100 * time.Microsecond)

func overviewJSON(r *run) (string, error) {
	unit := func(t int64) int64 { return (t - r.start) / overviewUnit }
	d := overviewData{Span: max(unit(r.end), 1), Unit: float64(overviewUnit), Clients: r.clients}
	lane := map[string]int{}
	for i, c := range r.clients {
		lane[c] = i
	}
	d.Holds = make([][]int64, len(r.clients))
	for i := range d.Holds {
		d.Holds[i] = []int64{}
	}
	for _, h := range r.holds {
		i, ok := lane[h.Client]
		if !ok {
			continue
		}
		d.Holds[i] = append(d.Holds[i], unit(h.Start), max(unit(h.End), unit(h.Start)))
		d.Counts.Holds++
	}
	d.Overlaps = [][]any{}
	for _, w := range r.judged.Verdict.MutualExclusion.Windows {
		end := w.Start + int64(w.Length)
		d.Overlaps = append(d.Overlaps, []any{unit(w.Start), unit(end), w.Clients[0], w.Clients[1],
			checker.Human(w.Length), r.windowAt(w.Start, end), string(w.Class), w.Why})
	}
	d.Counts.Overlaps = len(d.Overlaps)
	kinds := map[string]int{}
	d.Faults = [][]any{}
	for _, f := range r.faults {
		k, ok := kinds[f.Kind]
		if !ok {
			k = len(d.Kinds)
			kinds[f.Kind] = k
			d.Kinds = append(d.Kinds, faultKind{f.Kind, faultColor(f.Kind)})
		}
		d.Faults = append(d.Faults, []any{unit(f.Start), unit(f.End), k,
			fmt.Sprintf("%s (%s)", nemesis.Label(f), checker.Human(time.Duration(f.End-f.Start))), r.windowAt(f.Start, f.End)})
	}
	d.Counts.Faults = len(d.Faults)
	d.Windows = [][]any{}
	for _, w := range r.windows {
		if w.drawn {
			d.Windows = append(d.Windows, []any{unit(w.from), unit(w.to), w.id})
		}
	}
	d.Counts.Windows = len(d.Windows)
	raw, err := json.Marshal(d)
	return string(raw), err
}
