package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// A run whose only harm is a holder's failed release reads as damaged, and the report's
// collateral section names the client.
func TestReportShowsCollateralDamage(t *testing.T) {
	src, err := os.ReadFile("../scenarios/no-faults-set-nx-px.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, scenarioFile), src, 0o644)
	const s = int64(1e9)
	w, err := history.Create(filepath.Join(dir, historyFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []history.Event{
		{Time: s, Process: history.Controller, Type: history.Note, F: history.Start},
		{Time: s + 1e6, Process: "client-1", Type: history.Invoke, F: history.Acquire, Op: 1},
		{Time: s + 2e6, Process: "client-1", Type: history.OK, F: history.Acquire, Op: 1, Token: history.TokenOf(1)},
		{Time: s + 8e6, Process: "client-1", Type: history.Invoke, F: history.Release, Op: 2},
		{Time: s + 9e6, Process: "client-1", Type: history.Fail, F: history.Release, Op: 2, Error: "not held"},
		{Time: s + 10e6, Process: history.Controller, Type: history.Note, F: history.End},
	} {
		w.Append(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	page := string(raw)
	for _, want := range []string{`<header class="verdict damaged">`, "Damaged: mutual exclusion held", `<section id="collateral">`,
		"<td>client-1</td><td>1</td><td>0</td>", "1 failed release."} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
