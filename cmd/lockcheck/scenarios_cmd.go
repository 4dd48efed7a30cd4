package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/scenarios"
)

func newScenariosCommand() *cobra.Command {
	var asJSON, wide bool
	cmd := &cobra.Command{
		Use:   "scenarios [WORD...]",
		Short: "List the scenarios built into lockcheck, with their claims (lockcheck run NAME runs one)",
		Long: `List the scenarios built into lockcheck: name, claims (docs/CLAIMS.md) and what each shows
(--wide: the lock and the whole description too). WORDs keep only the scenarios whose name, lock or claims contain
every one of them (lockcheck scenarios debate K2). lockcheck run NAME runs one from any folder;
a scenario of the same name in the current folder's scenarios/ is run instead.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var list []scenarios.ShippedScenario
			for _, s := range scenarios.Shipped() {
				if matchesAll(s, args) {
					list = append(list, s)
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if list == nil {
					list = []scenarios.ShippedScenario{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			t := table{header: []string{"NAME", "WHAT IT SHOWS [CLAIMS]"}}
			width := screenWidth
			if wide {
				t.header = []string{"NAME", "CLAIMS", "LOCK", "WHAT IT SHOWS", "DESCRIPTION"}
				width = 0
			}
			for _, s := range list {
				if wide {
					t.add(s.Name, strings.Join(s.Claims, ","), s.Lock, s.Summary, strings.Join(strings.Fields(s.Description), " "))
				} else {
					t.add(s.Name, withClaims(s))
				}
			}
			if err := t.write(out, width); err != nil {
				return err
			}
			_, err := fmt.Fprintf(out, "\n%d scenarios; lockcheck run NAME runs one from any folder (--wide, --json: more)\n", len(list))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (name, claims, lock, summary, description, supports) for tools")
	cmd.Flags().BoolVar(&wide, "wide", false, "the lock and the whole description too, however wide")
	return cmd
}

// withClaims is the scenario's summary followed by its claims: "... [K2,A1]".
func withClaims(s scenarios.ShippedScenario) string {
	if len(s.Claims) == 0 {
		return s.Summary
	}
	return "[" + strings.Join(s.Claims, ",") + "] " + s.Summary
}

// matchesAll reports whether every word is in the scenario's name, lock or claims (any case).
func matchesAll(s scenarios.ShippedScenario, words []string) bool {
	hay := strings.ToLower(s.Name + " " + s.Lock + " " + strings.Join(s.Claims, " "))
	for _, w := range words {
		if !strings.Contains(hay, strings.ToLower(w)) {
			return false
		}
	}
	return true
}
