package matrix

import (
	"testing"

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
