package checker

import "github.com/lockcheck/lockcheck/history"

// Op is one client operation as a report draws it: its invoke and, if it came, its completion.
type Op struct {
	Client  string
	F       string
	CS      int64
	Invoke  int64        // CLOCK_MONOTONIC
	Done    int64        // of the completion; 0 when it never completed
	Outcome history.Type // ok, fail or info; "" when it never completed
	Token   *int64       // the completion's token, else the invoke's
	Role    string
	Error   string
	// Registers of the completion, else of the invoke (a write's values, status unknown).
	Registers []RegisterValue
}

// RegisterValue is one register's part in an operation.
type RegisterValue struct {
	Name   string
	Value  int64
	Status string // history.Accepted, Rejected, Unknown, or "" (a final value)
}

var statusNames = [...]string{sNone: "", sAccepted: history.Accepted, sRejected: history.Rejected, sUnknown: history.Unknown, sOther: "?"}

var typeNames = [...]history.Type{tOther: "", tInvoke: history.Invoke, tOK: history.OK, tFail: history.Fail, tInfo: history.Info, tNote: history.Note}

// EachOp calls fn with every client operation, in invoke order. The Op and its Registers are
// reused for the next call: fn copies what it keeps. A soak run has hundreds of thousands of
// operations; this way a report keeps only what it draws.
func (l *Log) EachOp(fn func(*Op)) {
	ops := l.clientOps()
	var o Op
	var token int64
	for i := range ops {
		p := &ops[i]
		inv := &l.recs[p.invoke]
		o = Op{Client: l.str(p.proc), F: l.str(p.f), CS: p.cs, Invoke: inv.t, Role: l.str(inv.role),
			Registers: o.Registers[:0]}
		src := inv
		if p.completed() {
			done := &l.recs[p.done]
			o.Done, o.Outcome, o.Error = done.t, typeNames[done.typ], l.str(done.err)
			if done.role != idEmpty {
				o.Role = l.str(done.role)
			}
			if done.nregs > 0 {
				src = done
			}
			if done.hasToken {
				token, o.Token = done.token, &token
			}
		}
		if o.Token == nil && inv.hasToken {
			token, o.Token = inv.token, &token
		}
		for _, v := range l.registersOf(src) {
			o.Registers = append(o.Registers, RegisterValue{Name: l.regNames[v.name], Value: v.value, Status: statusNames[v.status]})
		}
		fn(&o)
	}
}

// Mark is a moment on a client's lane: it noticed it lost the lock, or it died.
type Mark struct {
	Client string
	Time   int64
	Kind   string // history.Lost or history.Crash
	Error  string
}

// Marks are every client's "lost" notes and the controller's notes of a client's death, in time
// order.
func (l *Log) Marks() []Mark {
	var out []Mark
	for i := range l.recs {
		r := &l.recs[i]
		switch {
		case r.f == idLost && l.isClient(r.proc):
			out = append(out, Mark{Client: l.str(r.proc), Time: r.t, Kind: history.Lost, Error: l.str(r.err)})
		case r.f == idCrash && r.proc == idController && r.target != idEmpty:
			out = append(out, Mark{Client: l.str(r.target), Time: r.t, Kind: history.Crash, Error: l.str(r.err)})
		}
	}
	return out
}

// Clients are the client processes the history mentions.
func (l *Log) Clients() []string {
	seen := map[int32]bool{}
	var out []string
	for i := range l.recs {
		if p := l.recs[i].proc; l.isClient(p) && !seen[p] {
			seen[p] = true
			out = append(out, l.str(p))
		}
	}
	return out
}

// RegisterNames are the registers the history mentions (accesses, final and initial values).
func (l *Log) RegisterNames() []string { return append([]string(nil), l.regNames...) }

// Bounds are the run's start and end (the controller's notes, else the first and last events).
func (l *Log) Bounds() (start, end int64) {
	b := l.bounds()
	return b.start, b.end
}
