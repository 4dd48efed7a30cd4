package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// lockcheck check of a run whose fault nobody felt opens its table with it and says it under the
// outcome (also for each run of run --count, which prints no table).
func TestCheckSaysTheFaultWasNotExercised(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte("name: x\nlock: set-nx-px\nclients: 1\nttl: 1s\nduration: 1s\n"+
		"nemesis:\n  - {fault: crash, target: n1, at: 500ms, for: 100ms}\n"), 0o644)
	const s = int64(1e9)
	w, err := history.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []history.Event{
		{Time: s, Process: history.Controller, Type: history.Note, F: history.Start},
		{Time: s + 1e6, Process: "client-1", Type: history.Invoke, F: history.Acquire, Op: 1},
		{Time: s + 2e6, Process: "client-1", Type: history.OK, F: history.Acquire, Op: 1},
		{Time: s + 3e6, Process: "client-1", Type: history.Invoke, F: history.Release, Op: 2},
		{Time: s + 4e6, Process: "client-1", Type: history.OK, F: history.Release, Op: 2},
		{Time: s + 500e6, Process: history.Nemesis, Type: history.Invoke, F: "crash", Op: 1, Target: "n1"},
		{Time: s + 600e6, Process: history.Nemesis, Type: history.OK, F: "crash", Op: 1, Target: "n1"},
		{Time: s + 1000e6, Process: history.Controller, Type: history.Note, F: history.End},
	} {
		w.Append(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"check", dir})
	root.Execute()
	for _, want := range []string{"FAULT NOT EXERCISED  no client held or asked for the lock while crash n1 (0.50 s) lasted",
		"the fault was NOT exercised, so the outcome says nothing about it: no client held"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lockcheck check lacks %q:\n%s", want, out.String())
		}
	}
}
