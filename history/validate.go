package history

import (
	"fmt"
	"strings"
)

// IsClient tells client processes from the harness's own (controller, nemesis, resource).
func IsClient(process string) bool {
	switch process {
	case "", Nemesis, Resource, Controller:
		return false
	}
	return true
}

var types = []Type{Invoke, OK, Fail, Info, Note}

// validator checks each event on its own and, for clients, that every completion has its invoke
// (in either order in the file, but not later in time): a checker fed an unpaired completion
// could only drop or guess it.
type validator struct {
	open map[string]map[int64]half // client → op → the half of it seen so far
}

// half is an invoke still waiting for its completion, or a completion written before its invoke.
type half struct {
	f          string
	typ        Type
	t          int64
	line       int
	completion bool
}

func newValidator() *validator { return &validator{open: map[string]map[int64]half{}} }

func (v *validator) check(e *Event, s seen, line int) error {
	for _, f := range []struct {
		name    string
		present bool
	}{{"t", s.t}, {"process", s.process}, {"type", s.typ}, {"f", s.f}} {
		if !f.present {
			return &fieldError{field: f.name, msg: "missing: every event has t, process, type and f"}
		}
	}
	known := false
	for _, t := range types {
		known = known || e.Type == t
	}
	if !known {
		names := make([]string, len(types))
		for i, t := range types {
			names[i] = string(t)
		}
		return &fieldError{field: "type", msg: fmt.Sprintf("%q is not one of %s", e.Type, strings.Join(names, ", "))}
	}
	if e.Process == "" {
		return &fieldError{field: "process", msg: "empty"}
	}
	if e.F == "" {
		return &fieldError{field: "f", msg: "empty"}
	}
	for name, r := range e.Registers {
		if name == "" {
			return &fieldError{field: "registers", msg: "a register without a name"}
		}
		switch r.Status {
		case "", Accepted, Rejected, Unknown:
		default:
			return &fieldError{field: "registers." + name + ".status",
				msg: fmt.Sprintf("%q is not one of %q, %q, %q", r.Status, Accepted, Rejected, Unknown)}
		}
	}
	client := IsClient(e.Process)
	access := e.F == Read || e.F == Write
	if access && len(e.Registers) == 0 && ((client && e.Type == OK) || (e.Process == Resource && e.Type == Note)) {
		return &fieldError{field: "registers", msg: fmt.Sprintf("a %s that took effect must say what it read or wrote on each register", e.F)}
	}
	if !client || e.Type == Note {
		return nil
	}
	if e.Op == 0 {
		return &fieldError{field: "op", msg: fmt.Sprintf("missing: a client's %s must carry its operation number", e.Type)}
	}
	open := v.open[e.Process]
	if open == nil {
		open = map[int64]half{}
		v.open[e.Process] = open
	}
	this := half{f: e.F, typ: e.Type, t: e.Time, line: line, completion: e.Type != Invoke}
	other, found := open[e.Op]
	switch {
	case !found:
		open[e.Op] = this
		return nil
	case other.completion == this.completion && this.completion:
		return &fieldError{field: "op", msg: fmt.Sprintf("%s's op %d completes twice (line %d and here)", e.Process, e.Op, other.line)}
	case other.completion == this.completion:
		return &fieldError{field: "op", msg: fmt.Sprintf("%s invokes op %d again (line %d) before it completed", e.Process, e.Op, other.line)}
	}
	delete(open, e.Op)
	inv, done := other, this
	if this.typ == Invoke {
		inv, done = this, other
	}
	if inv.f != done.f {
		return &fieldError{field: "f", msg: fmt.Sprintf("%s's op %d is invoked as %s (line %d) but completes as %s "+
			"(line %d)", e.Process, e.Op, inv.f, inv.line, done.f, done.line)}
	}
	if done.t < inv.t {
		return &fieldError{field: "t", msg: fmt.Sprintf("%s's op %d completes (line %d) before it was invoked "+
			"(line %d)", e.Process, e.Op, done.line, inv.line)}
	}
	return nil
}

// finish reports a completion whose invoke never came, at the completion's line.
func (v *validator) finish() error {
	var first *LineError
	for process, ops := range v.open {
		for op, h := range ops {
			if h.completion && (first == nil || h.line < first.Line) {
				first = &LineError{Line: h.line, Err: &fieldError{field: "op",
					msg: fmt.Sprintf("a completion (%s %s) of %s's op %d, which no line invokes", h.typ, h.f, process, op)}}
			}
		}
	}
	if first == nil {
		return nil
	}
	return first
}
