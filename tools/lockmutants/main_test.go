//go:build mutants

package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/locks"
)

// Each mutant is its original's registry entry with one bug: same service, nodes, token, expiry
// and properties (so the matrix derives the same columns), its own name, the bug stated.
func TestMutantsKeepTheirOriginalsProperties(t *testing.T) {
	all := locks.Mutants()
	if len(all) < 8 {
		t.Fatalf("%d mutants, want at least 8", len(all))
	}
	for _, m := range all {
		o, err := locks.Get(m.Original)
		if err != nil {
			t.Fatal(err)
		}
		d := m.Design
		if !strings.HasPrefix(d.Name, "mutant-") || m.Bug == "" || !strings.Contains(d.Summary, m.Bug) {
			t.Errorf("%s: want a mutant- name and the bug in its summary, got %q", d.Name, d.Summary)
		}
		if d.ServiceName() != o.ServiceName() || d.Nodes != o.Nodes || d.Token != o.Token || d.Expires != o.Expires ||
			d.Reentrant != o.Reentrant || d.Queued != o.Queued || d.Fair != o.Fair || d.Renews != o.Renews || !slices.Equal(d.Points, o.Points) {
			t.Errorf("%s differs from %s beyond its bug", d.Name, o.Name)
		}
		if got, err := locks.Get(d.Name); err != nil || got.Name != d.Name {
			t.Errorf("%s is not registered: %v", d.Name, err)
		}
	}
}

func TestRowsPutEachOriginalOnceBeforeTheMutants(t *testing.T) {
	all := locks.Mutants()
	got := rows(all)
	var originals []string
	for _, m := range all {
		if !slices.Contains(originals, m.Original) {
			originals = append(originals, m.Original)
		}
	}
	if len(got) != len(originals)+len(all) || !slices.Equal(got[:len(originals)], originals) {
		t.Errorf("rows %v", got)
	}
	if _, err := pick(all, "mutant-redlock-no-elapsed,mutant-nope"); err == nil || !strings.Contains(err.Error(), "valid mutants: "+
		"mutant-redlock-no-elapsed") {
		t.Errorf("an unknown mutant must be refused with the valid names, got %v", err)
	}
}
