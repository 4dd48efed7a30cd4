package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// A run whose fault nobody felt says so under the headline: its verdict says nothing about the
// fault.
func TestReportSaysTheFaultWasNotExercised(t *testing.T) {
	src, err := os.ReadFile("../scenarios/no-faults-set-nx-px.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, scenarioFile), src, 0o644)
	const s = int64(1e9)
	events := []history.Event{
		{Time: s, Process: history.Controller, Type: history.Note, F: history.Start},
		{Time: s + 1e6, Process: "client-1", Type: history.Invoke, F: history.Acquire, Op: 1},
		{Time: s + 2e6, Process: "client-1", Type: history.OK, F: history.Acquire, Op: 1},
		{Time: s + 3e6, Process: "client-1", Type: history.Invoke, F: history.Release, Op: 2},
		{Time: s + 4e6, Process: "client-1", Type: history.OK, F: history.Release, Op: 2},
		{Time: s + 5e6, Process: history.Nemesis, Type: history.Invoke, F: "crash", Op: 1, Target: "n1"},
		{Time: s + 6e6, Process: history.Nemesis, Type: history.OK, F: "crash", Op: 1, Target: "n1"},
		{Time: s + 10e6, Process: history.Controller, Type: history.Note, F: history.End},
	}
	w, err := history.Create(filepath.Join(dir, historyFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		w.Append(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	if !strings.Contains(string(page), "Fault not exercised: no client held or asked for the lock while crash n1") {
		t.Errorf("the report does not say the crash was not exercised")
	}
}
