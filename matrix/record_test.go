package matrix

import (
	"path/filepath"
	"strings"
	"testing"
)

// A cell shows its worst run, with how many runs reached it.
func TestACellShowsItsWorstRun(t *testing.T) {
	c := Cell{Outcomes: []Outcome{{Status: Safe}, {Status: Unsafe}, {Status: Safe}}}
	c.summarise()
	if c.Status != Unsafe || c.Agree != 1 || c.Runs != 3 || c.Label() != "unsafe 1/3" {
		t.Fatalf("status %s, %d of %d, label %q", c.Status, c.Agree, c.Runs, c.Label())
	}
}

// A gate judges a cell its record says varies against its recorded rate: a run worse than the
// gate as often as measured passes; a cell that fails it more often than that, or a cell
// recorded steady, fails.
func TestAGateJudgesAVaryingCellByItsRecordedRate(t *testing.T) {
	cell := func(statuses ...Status) Cell {
		c := Cell{Lock: "l", Fault: "f"}
		for _, s := range statuses {
			c.Outcomes = append(c.Outcomes, Outcome{Status: s})
		}
		c.summarise()
		return c
	}
	varies := &RecordedCell{Runs: 10, Statuses: map[Status]int{Safe: 7, Unsafe: 3}}
	steady := &RecordedCell{Runs: 10, Statuses: map[Status]int{Safe: 10}}
	cases := []struct {
		name     string
		c        Cell
		recorded *RecordedCell
		pass     bool
	}{
		{"one unsafe run of three, recorded 3 of 10", cell(Safe, Unsafe, Safe), varies, true},
		{"eight unsafe runs of eight, recorded 3 of 10", cell(Unsafe, Unsafe, Unsafe, Unsafe, Unsafe, Unsafe, Unsafe, Unsafe), varies, false},
		{"one unsafe run, recorded steady", cell(Unsafe), steady, false},
		{"one unsafe run, never recorded", cell(Unsafe), nil, false},
		{"safe", cell(Safe), nil, true},
		{"a harness error never passes", cell(Error), varies, false},
	}
	for _, c := range cases {
		c.c.Recorded = c.recorded
		if got := c.c.Meets(Safe); got != c.pass {
			t.Errorf("%s: meets safe %v, want %v", c.name, got, c.pass)
		}
	}
	if l := cell(Unsafe); true {
		l.Recorded = varies
		if got := l.Label(); got != "unsafe (varies: unsafe 3/10, safe 7/10)" {
			t.Errorf("label %q", got)
		}
	}
}

// A record adds runs up, cell by cell, and keeps what it says of each.
func TestARecordAddsRunsUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	m := &Matrix{Cells: []Cell{{Lock: "l", Fault: "f", Outcomes: []Outcome{{Status: Safe}}}, {Lock: "l", Fault: "g",
		Outcomes: []Outcome{{Status: NA}}}}}
	for i, s := range []Status{Safe, Rescued} {
		m.Cells[0].Outcomes[0].Status = s
		r, err := ReadRecord(path)
		if err != nil {
			t.Fatal(err)
		}
		r.Add(m, "run")
		if i == 0 {
			r.Cells["l × f"].Why = "a reason"
		}
		if err := r.Write(path); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := ReadRecord(path)
	rc := r.Cells["l × f"]
	if rc == nil || rc.Runs != 2 || rc.Statuses[Safe] != 1 || rc.Statuses[Rescued] != 1 || rc.Why != "a reason" || !rc.Varies() ||
		r.Cells["l × g"] != nil || len(r.Measured) != 2 {
		t.Fatalf("record %+v, cell %+v", r, rc)
	}
}

// matrix.md and matrix.html say why a cell the record knows to vary varies, beside its rates.
func TestAVaryingCellSaysWhyInBothPages(t *testing.T) {
	rec := &RecordedCell{Runs: 2, Statuses: map[Status]int{Safe: 1, Rescued: 1}, Why: "the delayed write lands inside the next access"}
	m := &Matrix{Locks: []string{"l"}, Faults: []string{"none"}, Cells: []Cell{{Lock: "l", Fault: "none", Status: Safe,
		Agree: 1, Runs: 1, Outcomes: []Outcome{{Status: Safe}}, Recorded: rec}}}
	var md, page strings.Builder
	m.Markdown(&md, "")
	if err := m.HTML(&page, ""); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"matrix.md": md.String(), "matrix.html": page.String()} {
		if !strings.Contains(text, "rescued 1/2, safe 1/2") || !strings.Contains(text, "varies: "+rec.Why) {
			t.Errorf("%s does not give the rates and why:\n%s", name, text)
		}
	}
	rec.Statuses = map[Status]int{Safe: 2}
	md.Reset()
	m.Markdown(&md, "")
	if strings.Contains(md.String(), "varies") && strings.Contains(md.String(), rec.Why) {
		t.Error("a cell that did not vary says why it varies")
	}
}

// A grid names each status a cell showed that its record never saw, once a cell; a cell the
// record does not know, a status it saw and n/a are not named.
func TestAGridNamesTheStatusesItsRecordNeverSaw(t *testing.T) {
	m := &Matrix{Cells: []Cell{
		{Lock: "get-then-set", Fault: "kill-holder", Outcomes: []Outcome{{Status: Broken}, {Status: Stuck}, {Status: Broken}}},
		{Lock: "set-nx-px", Fault: "none", Outcomes: []Outcome{{Status: Safe}}},
		{Lock: "new-design", Fault: "none", Outcomes: []Outcome{{Status: Unsafe}}},
		{Lock: "redisson", Fault: "waiter-expires", Outcomes: []Outcome{{Status: NA}}},
	}}
	rec := &Record{Cells: map[string]*RecordedCell{
		CellKey("get-then-set", "kill-holder"): {Runs: 17, Statuses: map[Status]int{Stuck: 17}},
		CellKey("set-nx-px", "none"):           {Runs: 3, Statuses: map[Status]int{Safe: 3}},
		CellKey("redisson", "waiter-expires"):  {Runs: 3, Statuses: map[Status]int{Safe: 3}},
	}}
	rec.Attach(m)
	got := Unrecorded(m)
	if len(got) != 1 || got[0].Cell.Lock != "get-then-set" || got[0].Status != Broken {
		t.Fatalf("unrecorded: %+v", got)
	}
}
