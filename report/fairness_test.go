package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// A client that asks in vain for six seconds while the other gets the lock sixty times: the page
// says starved in its headline and marks the client in its clients table.
func TestReportShowsAStarvedClient(t *testing.T) {
	src, err := os.ReadFile("../scenarios/no-faults-set-nx-px.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, scenarioFile), src, 0o644)
	const ms = int64(1e6)
	w, err := history.Create(filepath.Join(dir, historyFile))
	if err != nil {
		t.Fatal(err)
	}
	op := map[string]int64{}
	add := func(p, f string, typ history.Type, t int64) {
		if typ == history.Invoke {
			op[p]++
		}
		w.Append(history.Event{Time: 1e9 + t*ms, Process: p, Type: typ, F: f, Op: op[p]})
	}
	add(history.Controller, history.Start, history.Note, 0)
	for t := int64(100); t < 7000; t += 100 {
		add("client-2", history.Acquire, history.Invoke, t-1)
		add("client-2", history.Acquire, history.OK, t)
		add("client-2", history.Release, history.Invoke, t+60)
		add("client-2", history.Release, history.OK, t+61)
		add("client-1", history.Acquire, history.Invoke, t+10)
		add("client-1", history.Acquire, history.Fail, t+20)
	}
	add(history.Controller, history.End, history.Note, 7000)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	page := string(raw)
	for _, want := range []string{`<header class="verdict damaged">`, "Starved: mutual exclusion held", "client-1 starved (passed over",
		"<h2>Clients and fairness</h2>", `<tr class="bad"><td>client-1</td><td>0</td>`, "YES, 6.79s, never served"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		i := strings.Index(page, `<section id="fairness">`)
		t.Log(page[i:min(len(page), i+2000)])
	}
}
