package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// runCommand runs the CLI in this process and returns what it printed.
func runCommand(t *testing.T, args ...string) string {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		t.Fatalf("lockcheck %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func widest(text string) (int, string) {
	w, line := 0, ""
	for _, l := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(l); n > w {
			w, line = n, l
		}
	}
	return w, line
}

// The listings fit a 100-column terminal; --wide is the way to everything on one line.
func TestListingsFitIn100Columns(t *testing.T) {
	for _, args := range [][]string{{"list"}, {"list", "-v"}, {"scenarios"}} {
		out := runCommand(t, args...)
		if w, line := widest(out); w > screenWidth {
			t.Errorf("lockcheck %s: a line of %d columns:\n%s", strings.Join(args, " "), w, line)
		}
	}
	narrow, wide := runCommand(t, "list"), runCommand(t, "list", "--wide")
	if strings.Contains(narrow, "INCR of <key>:token in the acquiring script") ||
		!strings.Contains(wide, "INCR of <key>:token in the acquiring script") {
		t.Errorf("the fencing token in full belongs to --wide (and -v), not the narrow list")
	}
	verbose := runCommand(t, "list", "-v")
	for _, want := range []string{"fencing token: INCR of <key>:token in the acquiring script", "matrix columns that do not apply:", "WAITS"} {
		if !strings.Contains(verbose, want) {
			t.Errorf("list -v lacks %q", want)
		}
	}
}

// --json is for tools: the field names are part of the interface.
func TestListJSONHasStableFields(t *testing.T) {
	var rows []map[string]any
	if err := json.Unmarshal([]byte(runCommand(t, "list", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 20 {
		t.Fatalf("%d designs", len(rows))
	}
	for _, field := range []string{"name", "service", "nodes", "expires", "waits", "waits_by", "fencing_token", "source", "summary",
		"protects_against", "failure_modes", "scenarios", "program_points", "matrix_columns_not_applicable"} {
		if _, ok := rows[0][field]; !ok {
			t.Errorf("list --json: no field %q in %v", field, rows[0])
		}
	}
	var setNXPX map[string]any
	for _, r := range rows {
		if r["name"] == "set-nx-px" {
			setNXPX = r
		}
	}
	if setNXPX == nil || setNXPX["service"] != "redis" || setNXPX["waits"] != "polls" || setNXPX["expires"] != true {
		t.Errorf("set-nx-px: %v", setNXPX)
	}

	var list []map[string]any
	if err := json.Unmarshal([]byte(runCommand(t, "scenarios", "--json", "debate", "K2")), &list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range list {
		if s["name"] == "debate/k2-set-nx-px" {
			found = true
		}
		for _, field := range []string{"name", "claims", "lock", "summary", "description"} {
			if _, ok := s[field]; !ok {
				t.Errorf("scenarios --json: no field %q in %v", field, s)
			}
		}
	}
	if !found {
		t.Errorf("scenarios debate K2 does not list debate/k2-set-nx-px: %v", list)
	}
}

func TestWrapKeepsEveryLineWithinTheWidth(t *testing.T) {
	text := "  fails when: a holder paused past the TTL keeps believing it holds: double ownership (K2, K3)"
	got := wrap(text, 30, "      ")
	for _, l := range strings.Split(got, "\n") {
		if utf8.RuneCountInString(l) > 30 {
			t.Errorf("line of %d: %q", utf8.RuneCountInString(l), l)
		}
	}
	if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(text), " ") || !strings.HasPrefix(got, "  fails") {
		t.Errorf("wrap changed the words or the lead: %q", got)
	}
	if cut("abcdef", 4) != "abc…" || cut("abc", 4) != "abc" {
		t.Errorf("cut: %q %q", cut("abcdef", 4), cut("abc", 4))
	}
}
