package matrix

// record.go: how often each cell of the grid showed each status, as measured by running it many
// times (make matrix-repeat). A cell whose runs differ hangs on timing no fault pins down; the
// record says at what rate, and a gate judges such a cell against its rate, the way a scenario's
// sometimes: block is judged, so that chance alone does not fail a CI run. The record lives in
// the repository (repeatability.json, built into lockcheck) with the measurement's conditions.

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/scenarios"
)

// Record is the measured rates of the grid's cells.
type Record struct {
	// Measured says when, where and how: "2026-11-28, 2 cores, lockcheck matrix --count 2 ...".
	Measured []string                 `json:"measured"`
	Cells    map[string]*RecordedCell `json:"cells"` // by CellKey
}

// RecordedCell is one cell's runs, counted by status.
type RecordedCell struct {
	Runs     int            `json:"runs"`
	Statuses map[Status]int `json:"statuses"`
	// Why says what makes the cell vary, when it does, as found from its runs.
	Why string `json:"why,omitempty"`
}

// Differed lists the cells of m whose runs did not all reach the same status: the cells a
// repeatability record is for.
func Differed(m *Matrix) []Cell {
	var out []Cell
	for _, c := range m.Cells {
		if c.Agree < c.Runs {
			out = append(out, c)
		}
	}
	return out
}

// Unseen is a cell's status that its record never saw, with what the record did see.
type Unseen struct {
	Cell   Cell
	Status Status
}

// Unrecorded lists, for each cell the record knows (Attach), the statuses its runs showed that
// the record never saw: a cell whose verdict moved, by a change of the design, of the checker or
// of what the grid runs beside it, which no rate in the record speaks for.
func Unrecorded(m *Matrix) []Unseen {
	var out []Unseen
	for _, c := range m.Cells {
		if c.Recorded == nil {
			continue
		}
		seen := map[Status]bool{}
		for _, o := range c.Outcomes {
			if o.Status == NA || o.Status == Error || seen[o.Status] || c.Recorded.Statuses[o.Status] > 0 {
				continue
			}
			seen[o.Status] = true
			out = append(out, Unseen{Cell: c, Status: o.Status})
		}
	}
	return out
}

// Varies reports whether the cell's runs showed more than one status.
func (r *RecordedCell) Varies() bool { return r != nil && len(r.Statuses) > 1 }

// Rates are the cell's statuses with their counts, worst first: "unsafe 2/6, safe 4/6".
func (r *RecordedCell) Rates() string {
	var parts []string
	for _, s := range orderedStatuses(r.Statuses) {
		parts = append(parts, fmt.Sprintf("%s %d/%d", s, r.Statuses[s], r.Runs))
	}
	return strings.Join(parts, ", ")
}

// worseThan is the share of the recorded runs with a status worse than require.
func (r *RecordedCell) worseThan(require Status) float64 {
	if r == nil || r.Runs == 0 {
		return 0
	}
	n := 0
	for s, k := range r.Statuses {
		if s != NA && s != Error && !statusMeets(s, require) {
			n += k
		}
	}
	return float64(n) / float64(r.Runs)
}

// rateTolerance widens a recorded rate when a gate judges a cell against it: a record of a few
// runs says little more than that the cell can go either way.
const rateTolerance = 0.15

// orderedStatuses lists statuses worst first (error first, n/a last).
func orderedStatuses(m map[Status]int) []Status {
	out := slices.Collect(maps.Keys(m))
	sort.Slice(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if out[i] == Error || out[j] == Error {
			return out[i] == Error && out[j] != Error
		}
		return ri < rj
	})
	return out
}

//go:embed repeatability.json
var recordedJSON []byte

// Recorded is the record built into lockcheck (repeatability.json).
func Recorded() *Record {
	var r Record
	if err := json.Unmarshal(recordedJSON, &r); err != nil || r.Cells == nil {
		return &Record{Cells: map[string]*RecordedCell{}}
	}
	return &r
}

// ReadRecord reads a record file; a missing file is an empty record.
func ReadRecord(path string) (*Record, error) {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return &Record{Cells: map[string]*RecordedCell{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Cells == nil {
		r.Cells = map[string]*RecordedCell{}
	}
	return &r, nil
}

// Add counts m's runs into the record (keeping what each cell's Why says), noting how m was run.
func (r *Record) Add(m *Matrix, how string) {
	r.Measured = append(r.Measured, how)
	for _, c := range m.Cells {
		for _, o := range c.Outcomes {
			if o.Status == NA || o.Status == Error {
				continue
			}
			key := CellKey(c.Lock, c.Fault)
			rc := r.Cells[key]
			if rc == nil {
				rc = &RecordedCell{Statuses: map[Status]int{}}
				r.Cells[key] = rc
			}
			rc.Runs++
			rc.Statuses[o.Status]++
		}
	}
}

// Write writes the record as indented JSON.
func (r *Record) Write(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// Attach gives each cell of m what the record says of it.
func (r *Record) Attach(m *Matrix) {
	for i := range m.Cells {
		c := &m.Cells[i]
		c.Recorded = r.Cells[CellKey(c.Lock, c.Fault)]
	}
}

// withinRate reports whether a cell's runs worse than require are as many as its recorded rate
// of such runs explains (scenarios.ConsistentWithRate): a cell that varies fails a gate only when
// it fails it more often than it was measured to.
func (c Cell) withinRate(require Status) bool {
	p := c.Recorded.worseThan(require)
	if p == 0 || !c.Recorded.Varies() {
		return false
	}
	worse := 0
	for _, o := range c.Outcomes {
		if o.Status != NA && o.Status != Error && !statusMeets(o.Status, require) {
			worse++
		}
	}
	return scenarios.ConsistentWithRate(worse, len(c.Outcomes), p, rateTolerance)
}
