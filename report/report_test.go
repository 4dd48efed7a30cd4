package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// A folder never judged (no verdict.json) still gets a report; a kind of fault the report has
// never heard of is drawn from its invoke/ok pair like any other; and the page fetches nothing.
func TestWriteDrawsUnknownFaultKindsAndStaysSelfContained(t *testing.T) {
	src, err := os.ReadFile("../scenarios/no-faults-set-nx-px.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := syntheticRun(t, src)
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	for _, want := range []string{`data-kind="disk-full"`, "disk-full n1", `class="hold"`, `class="acc rejected"`, `id="plot-latency"`,
		`id="plot-throughput"`, "mutual exclusion held",
		`<section id="fairness">`, "0 of 1 acquisitions overtook someone", "Fairness: no acquisition overtook"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// A register no client touched says what the lock lacked, in the CLI table's words: the
	// history's lock has a token but no random value.
	if !strings.Contains(page, "not used: the lock has no random value") || !strings.Contains(page, "not used: the lock has no fencing token") {
		t.Errorf("the registers table does not say what the lock lacked for cas-random (no random value) and fenced-rw (no fencing token)")
	}
	// Self-contained: no external script, style, image or font.
	if m := regexp.MustCompile(`(?i)(<script[^>]+src=|<link |@import|url\(\s*['"]?https?:|<img[^>]+src="https?:)`).FindString(page); m != "" {
		t.Errorf("report loads something from outside: %q", m)
	}
}

// An old run whose scenario no longer passes the loader (here: a lock since renamed) still gets
// its report, from the file as it is; a folder with only a history gets one too, which says so.
func TestWriteReadsAnOldScenarioLoosely(t *testing.T) {
	src, err := os.ReadFile("../scenarios/no-faults-set-nx-px.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := syntheticRun(t, []byte(strings.Replace(string(src), "lock: set-nx-px", "lock: retired-design", 1)))
	if err := Write(dir); err != nil {
		t.Fatalf("old run: %v", err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	if !strings.Contains(string(raw), "retired-design") {
		t.Errorf("the report does not name the run's lock")
	}
	os.Remove(filepath.Join(dir, scenarioFile))
	if err := Write(dir); err != nil {
		t.Fatalf("a folder without its scenario: %v", err)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, ReportFile))
	if !strings.Contains(string(raw), "no scenario.yaml in the folder") {
		t.Errorf("the report of a folder without scenario.yaml does not say it has none")
	}
}

// syntheticRun is a run folder with the given scenario and a small hand-written history: one
// client's critical section, whose write fencing rejects, under a fault of a kind not known here.
func syntheticRun(t *testing.T, scenario []byte) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, scenarioFile), scenario, 0o644)
	const s = int64(1e9)
	regs := func(status string) map[string]history.Register {
		return map[string]history.Register{"unfenced": {Value: 1, Status: status}}
	}
	events := []history.Event{
		{Time: s, Process: history.Controller, Type: history.Note, F: history.Start},
		{Time: s + 1e6, Process: "client-1", Type: history.Invoke, F: history.Acquire, Op: 1},
		{Time: s + 2e6, Process: "client-1", Type: history.OK, F: history.Acquire, Op: 1, Token: history.TokenOf(1)},
		{Time: s + 3e6, Process: history.Nemesis, Type: history.Invoke, F: "disk-full", Op: 1, Target: "n1"},
		{Time: s + 4e6, Process: "client-1", Type: history.Invoke, F: history.Read, Op: 2, CS: 1},
		{Time: s + 5e6, Process: "client-1", Type: history.OK, F: history.Read, Op: 2, CS: 1,
			Registers: map[string]history.Register{"unfenced": {Value: 0, Status: history.Accepted}}},
		{Time: s + 6e6, Process: "client-1", Type: history.Invoke, F: history.Write, Op: 3, CS: 1, Registers: regs(history.Unknown)},
		{Time: s + 7e6, Process: "client-1", Type: history.OK, F: history.Write, Op: 3, CS: 1, Registers: regs(history.Rejected)},
		{Time: s + 8e6, Process: "client-1", Type: history.Invoke, F: history.Release, Op: 4},
		{Time: s + 9e6, Process: history.Nemesis, Type: history.OK, F: "disk-full", Op: 1, Target: "n1"},
		{Time: s + 9.5e6, Process: history.Resource, Type: history.Note, F: history.Final,
			Registers: map[string]history.Register{"unfenced": {Value: 0}, "fenced-rw": {Value: 0}, "cas-random": {Value: 0}}},
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
	return dir
}

// Windows of double ownership are drawn in the colour of their class, with the evidence on
// hover, and the legend names the classes.
func TestWindowsAreColouredByClass(t *testing.T) {
	dir := t.TempDir()
	const s = int64(1e9)
	rule := &history.PromiseRule{Words: "the lease"}
	events := []history.Event{{Time: s, Process: history.Controller, Type: history.Note, F: history.Start}}
	for _, c := range []string{"client-1", "client-2"} {
		events = append(events, history.Event{Time: s, Process: history.Controller, Type: history.Note, F: history.ClientDesign,
			Target: c, Design: "test", Rule: rule})
	}
	for i, c := range []string{"client-1", "client-2"} { // both promised 400 ms, 100 ms apart: a broken promise
		at := s + int64(i)*100e6
		events = append(events,
			history.Event{Time: at, Process: c, Type: history.Invoke, F: history.Acquire, Op: 1},
			history.Event{Time: at + 1e6, Process: c, Type: history.OK, F: history.Acquire, Op: 1, Promise: 400e6},
			history.Event{Time: s + 300e6, Process: c, Type: history.Invoke, F: history.Release, Op: 2})
	}
	events = append(events, history.Event{Time: s + 500e6, Process: history.Controller, Type: history.Note, F: history.End})
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
	raw, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	page := string(raw)
	for _, want := range []string{`class="overlap-mark broken"`, `class="overlap broken"`, "BROKEN: client-1 and client-2 were both promised",
		`<span class="swatch broken"></span>broken promise`, "Broken: the lock told two clients they held it at the same time"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
