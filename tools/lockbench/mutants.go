package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// storedMutants is the part of results/MUTANTS.json (written by `make mutants`, tools/lockmutants)
// that figure 10 shows.
type storedMutants struct {
	When    time.Time     `json:"when"`
	Wall    time.Duration `json:"wall_ns"`
	Caught  int           `json:"caught"`
	Mutants []struct {
		Name     string `json:"name"`
		CaughtBy []struct {
			Fault string `json:"fault"`
		} `json:"caught_by"`
	} `json:"mutants"`
}

// mutantScore is figure 10: how many mutant designs the matrix's columns catch, from the last
// `make mutants` (running it takes longer than every other figure together).
func mutantScore(_ context.Context, c config) (string, error) {
	stored := filepath.Join(filepath.Dir(c.out), "MUTANTS.json")
	raw, err := os.ReadFile(stored)
	if err != nil {
		return "## 10. Mutants caught\n\nNo mutant run stored: `make mutants` runs the matrix on each mutant design and its original.\n", nil
	}
	var m storedMutants
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("%s: %w", stored, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## 10. Mutants caught\n\n**%d of %d** mutant designs caught by at least one matrix column. Stored by `make mutants` on %s "+
		"(%s, took %s); not run again here.\n\n",
		m.Caught, len(m.Mutants), m.When.Format("2006-01-02 15:04 MST"), stored, m.Wall.Round(time.Second))
	b.WriteString("| mutant | columns that caught it |\n| --- | --- |\n")
	for _, mu := range m.Mutants {
		var cols []string
		for _, c := range mu.CaughtBy {
			cols = append(cols, "`"+c.Fault+"`")
		}
		if len(cols) == 0 {
			cols = []string{"none"}
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", mu.Name, strings.Join(cols, ", "))
	}
	return b.String(), nil
}
