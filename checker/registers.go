package checker

import (
	"math"

	"github.com/lockcheck/lockcheck/history"
)

// never is the return time of an increment whose write outcome is unknown: it may take effect at
// any later moment, so porcupine must be free to place it anywhere after its call.
const never = math.MaxInt64 >> 1

// section is one critical section's read-modify-write of one register, as the client saw it: an
// atomic increment that read Read and then wrote Read+1 with outcome Write.
type section struct {
	client    string
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
func collectRegisters(ops []op) map[string]*registerData {
	regs := map[string]*registerData{}
	get := func(name string) *registerData {
		r := regs[name]
		if r == nil {
			r = &registerData{}
			r.verdict.Applicable = true
			regs[name] = r
		}
		return r
	}
	writes := pairWrites(ops)
	for i, o := range ops {
		if o.f != history.Read || o.done == nil {
			continue
		}
		w := writes[i]
		for name, reg := range o.done.Registers {
			r := get(name)
			switch {
			case reg.Status == history.Rejected:
				r.verdict.ReadsRejected++
				continue
			case reg.Status != history.Accepted || o.done.Type != history.OK:
				r.verdict.ReadsUnknown++
				continue
			}
			r.verdict.ReadsAccepted++
			s := section{client: o.process, cs: o.cs, call: o.invoke.Time, ret: o.done.Time, Read: reg.Value}
			if w != nil {
				s.Write, s.ret = writeOutcome(w, name)
				switch s.Write {
				case history.Accepted:
					r.verdict.WritesAccepted++
				case history.Rejected:
					r.verdict.WritesRejected++
				default:
					r.verdict.WritesUnknown++
				}
			}
			r.sections = append(r.sections, s)
		}
	}
	// A register written but never read still counts as touched.
	for _, o := range ops {
		if o.f == history.Write && o.done != nil {
			for name := range o.done.Registers {
				get(name)
			}
		}
	}
	for _, r := range regs {
		r.verdict.AckedIncrements = r.verdict.WritesAccepted
	}
	return regs
}

// pairWrites maps each read (by index in ops) to the write of the same critical section: the
// same client's next write, provided their CS numbers agree when both are set.
func pairWrites(ops []op) map[int]*op {
	writes := map[int]*op{}
	lastRead := map[string]int{} // process → index of its latest read still without a write
	for i, o := range ops {
		switch o.f {
		case history.Read:
			lastRead[o.process] = i
		case history.Write:
			r, ok := lastRead[o.process]
			if !ok || (o.cs != 0 && ops[r].cs != 0 && o.cs != ops[r].cs) {
				continue
			}
			delete(lastRead, o.process)
			writes[r] = &ops[i]
		}
	}
	return writes
}

// writeOutcome is a write's outcome on one register and when the client learned it.
func writeOutcome(w *op, name string) (string, int64) {
	if w.done == nil {
		return history.Unknown, never
	}
	reg, ok := w.done.Registers[name]
	switch {
	case ok && reg.Status == history.Accepted:
		return history.Accepted, w.done.Time
	case ok && reg.Status == history.Rejected:
		return history.Rejected, w.done.Time
	case !ok && w.done.Type == history.Fail:
		return history.Rejected, w.done.Time // certainly did not take effect
	}
	return history.Unknown, never
}
