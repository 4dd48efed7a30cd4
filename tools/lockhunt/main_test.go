package main

import (
	"strings"
	"testing"
	"time"
)

// Every default cell's scenario is valid in both modes, with the fault family it names.
func TestDefaultCellsLoad(t *testing.T) {
	cells, err := parseCells(defaultCells, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cells {
		for _, mode := range []string{"random", "hunt"} {
			sc, err := cellScenario(p.design, p.fault, mode, 3, 30*time.Second)
			if err != nil {
				t.Fatalf("%s × %s, %s: %v", p.design, p.fault, mode, err)
			}
			r := sc.Schedule().Random
			if r == nil || r.Faults[0] != p.fault || (r.Mode == "hunt") != (mode == "hunt") || sc.Seed != 3 {
				t.Fatalf("%s × %s, %s: package %+v", p.design, p.fault, mode, r)
			}
		}
	}
}

func TestCellsFlag(t *testing.T) {
	got, err := parseCells("", "set-nx-px,zk", "pause,clock")
	if err != nil || len(got) != 4 || got[3] != (pair{"zk", "clock"}) {
		t.Fatalf("designs × faults = %v, %v", got, err)
	}
	if _, err := parseCells("set-nx-px", "", ""); err == nil || !strings.Contains(err.Error(), "design:fault") {
		t.Fatalf("a cell without its fault: %v", err)
	}
}
