package checker

import (
	"github.com/lockcheck/lockcheck/history"
)

// section is one critical section's read-modify-write of one register, as the client saw it: it
// read Read and then wrote Read+1 with outcome Write. When the write's outcome is unknown, ret is
// when the client sent it: the read is over by then, and the write may land at any later moment
// (the model in linearizable.go keeps it pending).
type section struct {
	client    int32 // string id
	cs        int64
	call, ret int64
	Read      int64
	Write     string // history.Accepted, Rejected or Unknown; "" when no write followed the read
}

// registerData gathers what the history says about one register.
type registerData struct {
	verdict  RegisterVerdict // counts only; the rest is filled in by the checks
	sections []section
}

// collectRegisters walks each client's reads and writes. Only a read accepted by the register
// becomes a section: a rejected or unknown read tells nothing of the register's value.
func (l *Log) collectRegisters(ops []op) map[string]*registerData {
	byID := make([]*registerData, len(l.regNames))
	get := func(name uint8) *registerData {
		r := byID[name]
		if r == nil {
			r = &registerData{}
			r.verdict.Applicable = true
			byID[name] = r
		}
		return r
	}
	writes := pairWrites(ops)
	for i := range ops {
		o := &ops[i]
		if o.f != idRead || !o.completed() {
			continue
		}
		done := &l.recs[o.done]
		w := writes[i]
		for _, reg := range l.registersOf(done) {
			r := get(reg.name)
			switch {
			case reg.status == sRejected:
				r.verdict.ReadsRejected++
				continue
			case reg.status != sAccepted || done.typ != tOK:
				r.verdict.ReadsUnknown++
				continue
			}
			r.verdict.ReadsAccepted++
			s := section{client: o.proc, cs: o.cs, call: l.recs[o.invoke].t, ret: done.t, Read: reg.value}
			if w >= 0 {
				s.Write, s.ret = l.writeOutcome(&ops[w], reg.name)
				switch s.Write {
				case history.Accepted:
					r.verdict.WritesAccepted++
				case history.Rejected:
					r.verdict.WritesRejected++
				default:
					r.verdict.WritesUnknown++
					if l.landed[landedKey{ops[w].proc, ops[w].cs, reg.name}] {
						r.verdict.LandedUnknown++
					}
				}
			}
			r.sections = append(r.sections, s)
		}
	}
	// A register written but never read still counts as touched.
	for i := range ops {
		if o := &ops[i]; o.f == idWrite && o.completed() {
			for _, reg := range l.registersOf(&l.recs[o.done]) {
				get(reg.name)
			}
		}
	}
	regs := map[string]*registerData{}
	for id, r := range byID {
		if r != nil {
			r.verdict.AckedIncrements = r.verdict.WritesAccepted
			regs[l.regNames[id]] = r
		}
	}
	return regs
}

// pairWrites maps each read (by index in ops) to the write of the same critical section (its
// index, or -1): the same client's next write, provided their CS numbers agree when both are set.
func pairWrites(ops []op) []int32 {
	writes := make([]int32, len(ops))
	lastRead := map[int32]int{} // client → index of its latest read still without a write
	for i := range ops {
		writes[i] = -1
		o := &ops[i]
		switch o.f {
		case idRead:
			lastRead[o.proc] = i
		case idWrite:
			r, ok := lastRead[o.proc]
			if !ok || (o.cs != 0 && ops[r].cs != 0 && o.cs != ops[r].cs) {
				continue
			}
			delete(lastRead, o.proc)
			writes[r] = int32(i)
		}
	}
	return writes
}

// writeOutcome is a write's outcome on one register and the end of its section: when the client
// learned the outcome, or, when it never did, when it sent the write.
func (l *Log) writeOutcome(w *op, name uint8) (string, int64) {
	sent := l.recs[w.invoke].t
	if !w.completed() {
		return history.Unknown, sent
	}
	done := &l.recs[w.done]
	reg, ok := l.register(done, name)
	switch {
	case ok && reg.status == sAccepted:
		return history.Accepted, done.t
	case ok && reg.status == sRejected:
		return history.Rejected, done.t
	case !ok && done.typ == tFail:
		return history.Rejected, done.t // certainly did not take effect
	}
	return history.Unknown, sent
}
