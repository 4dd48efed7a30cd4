package runner

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// The progress line counts what it is fed: operations, the faults in force, acquisitions made
// while another client still believed it held the lock, and fencing rejections.
func TestProgressLineCountsViolationsAndFaultsInForce(t *testing.T) {
	p := NewProgress(&bytes.Buffer{}, 5*time.Second, false)
	ev := func(process string, typ history.Type, f string, op int64, mod ...func(*history.Event)) {
		e := history.Event{Time: history.Now(), Process: process, Type: typ, F: f, Op: op}
		for _, m := range mod {
			m(&e)
		}
		p.Event(e)
	}
	target := func(s string) func(*history.Event) { return func(e *history.Event) { e.Target = s } }
	ev(history.Controller, history.Note, history.Start, 0)
	ev("client-1", history.Invoke, history.Acquire, 1)
	ev("client-1", history.OK, history.Acquire, 1)
	ev("client-2", history.Invoke, history.Acquire, 1)
	ev("client-2", history.OK, history.Acquire, 1) // client-1 still believes it holds: a violation

	line := p.Line()
	if !strings.Contains(line, "faults in force: none") {
		t.Errorf("line %q before any fault lacks %q (\"faults: none\" reads as a run without faults)", line, "faults in force: none")
	}
	ev(history.Nemesis, history.Invoke, history.Pause, 1, target("client-1"))
	ev(history.Nemesis, history.Invoke, "disk-full", 2, target("n1")) // a kind of fault progress does not know
	line = p.Line()
	for _, want := range []string{"ops 2", "pause client-1", "disk-full n1", "overlapping holds so far: 1", "fencing rejections: 0"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}

	ev(history.Nemesis, history.OK, history.Pause, 1, target("client-1"))
	ev("client-1", history.Invoke, history.Write, 2)
	ev("client-1", history.OK, history.Write, 2, func(e *history.Event) {
		e.Registers = map[string]history.Register{"unfenced": {Value: 3, Status: history.Accepted}, "fenced-rw": {Value: 3, Status: history.Rejected}}
	})
	ev("client-1", history.Invoke, history.Release, 3)
	ev("client-2", history.Invoke, history.Release, 2)
	ev("client-3", history.Invoke, history.Acquire, 1)
	ev("client-3", history.OK, history.Acquire, 1) // nobody else holds now: no violation

	line = p.Line()
	for _, want := range []string{"ops 4", "faults in force: disk-full n1 ", "overlapping holds so far: 1", "fencing rejections: 1"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "pause") {
		t.Errorf("a healed pause is still shown: %q", line)
	}
}

// Readers of a read/write lock may hold together; a writer may not join them.
func TestProgressLetsReadersShare(t *testing.T) {
	p := NewProgress(&bytes.Buffer{}, time.Second, false)
	read := func(c string) { p.Event(history.Event{Process: c, Type: history.OK, F: history.Acquire, Role: "read"}) }
	read("client-1")
	read("client-2")
	if !strings.Contains(p.Line(), "overlapping holds so far: 0") {
		t.Fatalf("two readers counted as a violation: %q", p.Line())
	}
	p.Event(history.Event{Process: "client-3", Type: history.OK, F: history.Acquire, Role: "write"})
	if !strings.Contains(p.Line(), "overlapping holds so far: 1") {
		t.Fatalf("a writer joining readers is not counted: %q", p.Line())
	}
}

// Not a terminal: plain lines; a terminal: one line rewritten in place, cut to its width, and
// cleared at the end.
func TestProgressOutputForms(t *testing.T) {
	var plain bytes.Buffer
	p := NewProgress(&plain, time.Second, false)
	p.Event(history.Event{Time: history.Now(), Process: history.Controller, Type: history.Note, F: history.Start})
	p.print()
	p.print()
	if got := plain.String(); strings.Count(got, "\n") != 2 || strings.Contains(got, "\r") || !strings.HasPrefix(got, "progress: ") {
		t.Errorf("plain output %q", got)
	}
	var tty bytes.Buffer
	p = NewProgress(&tty, time.Second, true)
	p.Width = 30
	p.Start()
	p.Event(history.Event{Time: history.Now(), Process: history.Controller, Type: history.Note, F: history.Start})
	p.print()
	p.Stop()
	got := tty.String()
	if strings.Contains(got, "\n") || !strings.HasPrefix(got, "\r\x1b[K") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("terminal output %q", got)
	}
	for _, l := range strings.Split(got, "\r\x1b[K") {
		if len(l) >= 30 {
			t.Errorf("terminal line longer than the width: %q", l)
		}
	}
}
