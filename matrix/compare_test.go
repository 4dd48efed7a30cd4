package matrix

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/resource"
)

func cellOf(s Status, rescuers ...string) Cell {
	c := Cell{Outcomes: []Outcome{{Status: s, Rescuers: rescuers}}}
	c.summarise()
	return c
}

func withDamage(c Cell, failedReleases, refused int) Cell {
	c.Outcomes[0].FailedReleases, c.Outcomes[0].LegitRejections = failedReleases, refused
	return c
}

func withClass(c Cell, class checker.WindowClass) Cell {
	c.Outcomes[0].Class = class
	return c
}

func withFailed(c Cell, registers ...string) Cell {
	c.Outcomes[0].Failed = registers
	return c
}

// A mutant's cell is caught when it is worse than its original's: a worse status, or a rescue
// by fewer registers; the same, a better one, or a cell that judged nothing never is.
func TestWorse(t *testing.T) {
	both := []string{resource.FencedWrite, resource.FencedRW}
	cases := []struct {
		name      string
		mutant    Cell
		original  Cell
		wantWorse bool
	}{
		{"unsafe where the original was safe", cellOf(Unsafe), cellOf(Safe), true},
		{"rescued where the original was safe", cellOf(Rescued, resource.FencedRW), cellOf(Safe), true},
		{"stuck where the original was rescued", cellOf(Stuck), cellOf(Rescued, both...), true},
		{"the same status", cellOf(Unsafe), cellOf(Unsafe), false},
		{"better than the original", cellOf(Safe), cellOf(Unsafe), false},
		{"rescued by fewer registers", cellOf(Rescued, resource.FencedRW), cellOf(Rescued, both...), true},
		{"rescued by the same registers", cellOf(Rescued, both...), cellOf(Rescued, both...), false},
		{"rescued by other registers, not fewer", cellOf(Rescued, resource.FencedWrite), cellOf(Rescued, resource.FencedRW), false},
		{"collateral damage the original does not show", withDamage(cellOf(Unsafe), 1, 0), cellOf(Unsafe), true},
		{"collateral damage the original shows too", withDamage(cellOf(Rescued, both...), 0, 2), withDamage(cellOf(Rescued, both...), 0, 1), false},
		{"damaged where the original was safe", cellOf(Damaged), cellOf(Safe), true},
		{"data lost where the original's overlap lost none", withFailed(cellOf(Rescued, resource.FencedRW), resource.Unfenced), cellOf(Unsafe), true},
		{"the same registers failed", withFailed(cellOf(Unsafe), resource.Unfenced), withFailed(cellOf(Unsafe), resource.Unfenced), false},
		{"broken where the original was unsafe", cellOf(Broken), withClass(cellOf(Unsafe), checker.ClassOutlived), true},
		{"unsafe by a server fault where the original only outlived its promise",
			withClass(cellOf(Unsafe), checker.ClassExplained), withClass(cellOf(Unsafe), checker.ClassOutlived), true},
		{"unsafe by a holder outliving its promise, as the original", withClass(cellOf(Unsafe), checker.ClassOutlived),
			withClass(cellOf(Unsafe), checker.ClassOutlived), false},
		{"a harness error judges nothing", cellOf(Error), cellOf(Safe), false},
		{"inconclusive judges nothing", cellOf(Inconclusive), cellOf(Safe), false},
		{"n/a judges nothing", Cell{Status: NA}, cellOf(Safe), false},
	}
	for _, c := range cases {
		how, worse := Worse(c.mutant, c.original)
		if worse != c.wantWorse || (worse && how == "") {
			t.Errorf("%s: worse=%v (%q), want %v", c.name, worse, how, c.wantWorse)
		}
	}
}

// runs makes a cell of judged runs with these double-ownership windows, each in 200 acquisitions.
func runs(s Status, windows ...int) Cell {
	c := Cell{Lock: "l", Fault: "f"}
	for _, w := range windows {
		c.Outcomes = append(c.Outcomes, Outcome{Status: s, Windows: w, Acquisitions: 200})
	}
	c.summarise()
	return c
}

// A status hides how much: the magnitudes say it, beyond run-to-run noise.
func TestWorseByMagnitude(t *testing.T) {
	cases := []struct {
		name          string
		mutant, orig  Cell
		worse         bool
		wantInMessage string
	}{
		{
			"the same status, ten times the windows",
			runs(Unsafe, 20),
			runs(Unsafe, 2),
			true,
			"double-ownership windows per 1,000 acquisitions: 100.0, against at most 10.0",
		},
		{"a better status does not hide it (rescued, 159 windows, against unsafe with 1)", runs(Rescued, 159), runs(Unsafe, 1), true, "795.0"},
		{"one window more is noise", runs(Unsafe, 3), runs(Unsafe, 2), false, ""},
		{"half as much again plus two is not enough", runs(Unsafe, 7), runs(Unsafe, 4), false, ""},
		{
			"three runs a side, every new run above the baseline's worst",
			runs(Unsafe, 30, 35, 40),
			runs(Unsafe, 5, 2, 8),
			true,
			"at least 150.0 in each of 3 runs",
		},
		{"three runs a side, overlapping", runs(Unsafe, 30, 6, 40), runs(Unsafe, 5, 2, 8), false, ""},
		{"a cell against itself", runs(Unsafe, 5, 2, 8), runs(Unsafe, 5, 2, 8), false, ""},
	}
	for _, c := range cases {
		how, worse := Worse(c.mutant, c.orig)
		if worse != c.worse || !strings.Contains(how, c.wantInMessage) {
			t.Errorf("%s: worse=%v (%q), want %v with %q", c.name, worse, how, c.worse, c.wantInMessage)
		}
	}
	// A baseline written before acquisitions were recorded has no rates: not compared.
	old := runs(Unsafe, 1)
	old.Outcomes[0].Acquisitions = 0
	if how, worse := Worse(runs(Unsafe, 50), old); worse {
		t.Errorf("a baseline without acquisitions: %q", how)
	}
	// Starved clients, unfair overtakes (only where first come, first served is promised), stuck time.
	starved := CellOf("l", "f", Outcome{Status: Starved, Starved: 1, Acquisitions: 100})
	if how, worse := Worse(starved, runs(Safe, 0)); !worse || !strings.Contains(how, "starved clients: 1, against at most 0") {
		t.Errorf("a starved client: %q", how)
	}
	unfair := func(n int, promised bool) Cell {
		return CellOf("l", "f", Outcome{Status: Damaged, Unfair: n, FairPromised: promised, Acquisitions: 100})
	}
	if how, worse := Worse(unfair(40, true), unfair(3, true)); !worse || !strings.Contains(how, "unfair overtakes per 1,000 acquisitions") {
		t.Errorf("forty unfair overtakes against three: %q", how)
	}
	if how, worse := Worse(unfair(40, false), unfair(3, false)); worse {
		t.Errorf("overtakes of a design that promises nothing: %q", how)
	}
	stuck := func(d time.Duration) Cell {
		return CellOf("l", "f", Outcome{Status: Stuck, StuckFor: d, Acquisitions: 10})
	}
	if _, worse := Worse(stuck(4*time.Second), stuck(1200*time.Millisecond)); !worse {
		t.Error("stuck for 4 s against 1.2 s: not worse")
	}
	// A cell that judged nothing is never worse.
	if _, worse := Worse(runs(Inconclusive, 50), runs(Unsafe, 1)); worse {
		t.Error("inconclusive was worse")
	}
	// The status rule looks at the baseline's worst run: unsafe in one of three baseline runs
	// makes an unsafe cell no regression in status.
	flaky := CellOf("l", "f", Outcome{Status: Safe}, Outcome{Status: Unsafe}, Outcome{Status: Safe})
	if how, worse := Worse(CellOf("l", "f", Outcome{Status: Unsafe}, Outcome{Status: Unsafe}), flaky); worse {
		t.Errorf("unsafe against a baseline unsafe in one run of three: %q", how)
	}
}

func TestCompareAndCompareLocks(t *testing.T) {
	cell := func(lock, fault string, windows int) Cell {
		c := runs(Unsafe, windows)
		c.Lock, c.Fault = lock, fault
		return c
	}
	base := &Matrix{Cells: []Cell{cell("a", "none", 1), cell("a", "pause", 2)}}
	now := &Matrix{Cells: []Cell{cell("a", "none", 1), cell("a", "pause", 40), cell("b", "pause", 1)}}
	got := Compare(now, base)
	if len(got) != 1 || got[0].Lock != "a" || got[0].Fault != "pause" || got[0].Baseline != "a" {
		t.Errorf("Compare: %+v, want a × pause only", got)
	}
	if self := Compare(base, base); len(self) != 0 {
		t.Errorf("a matrix against itself: %+v", self)
	}
	pair := &Matrix{Cells: []Cell{cell("orig", "pause", 2), cell("copy", "pause", 40), cell("copy", "none", 5)}}
	got = CompareLocks(pair, "orig")
	if len(got) != 1 || got[0].Lock != "copy" || got[0].Baseline != "orig" || got[0].Fault != "pause" {
		t.Errorf("CompareLocks: %+v, want copy × pause against orig", got)
	}
}

// An upgrade gate judges bugs, not lease arithmetic: a release whose holders outlive their lease
// more often (every window outlived) is noted, not failed, unless asked; one whose windows
// include a broken promise still fails on the same figures.
func TestAnUpgradeGateSetsTheLimitOfEveryLeaseAside(t *testing.T) {
	cell := func(lock string, class checker.WindowClass, windows int) Cell {
		c := runs(Unsafe, windows)
		c.Lock, c.Fault = lock, "pause"
		for i := range c.Outcomes {
			c.Outcomes[i].Class = class
		}
		return c
	}
	m := &Matrix{Cells: []Cell{cell("old", checker.ClassOutlived, 2), cell("new", checker.ClassOutlived, 40)}}
	regs := CompareLocks(m, "old")
	if len(regs) != 1 {
		t.Fatalf("the plain comparison sees more windows: %+v", regs)
	}
	kept, notes := SetLimitsAside(m, regs, false)
	if len(kept) != 0 || len(notes) != 1 || !strings.Contains(notes[0].How[0], "double-ownership windows per 1,000") {
		t.Errorf("outlived only: kept %+v, notes %+v; want one note and no regression", kept, notes)
	}
	if kept, _ := SetLimitsAside(m, regs, true); len(kept) != 1 {
		t.Errorf("--baseline-limits must gate it: %+v", kept)
	}
	m = &Matrix{Cells: []Cell{cell("old", checker.ClassOutlived, 2), cell("new", checker.ClassBroken, 40)}}
	if kept, notes := SetLimitsAside(m, CompareLocks(m, "old"), false); len(kept) != 1 || len(notes) != 0 {
		t.Errorf("a broken promise stays a regression: kept %+v, notes %+v", kept, notes)
	}
}
