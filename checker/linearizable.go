package checker

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// regState is the register as the model sees it: its value, and whether a write whose outcome
// the client never learned may still land. Such a write read the current value and writes one
// more; it can land at any later moment, but only while the register still holds what it read
// (else it would not be an atomic increment, and no linearization has it land there). Values
// only grow, so once anything else is written no pending write can land any more: one flag is
// all the pending writes there can be.
type regState struct {
	v       int64
	pending bool
}

// probe is a made-up last operation that asks whether a segment can end in a given state
// (segments.go).
type probe struct{ want regState }

// incrementModel is a register that critical sections increment. A section must read the
// current value (or the value a pending write leaves when it lands just before); an accepted
// write adds one and ends any pending one; a rejected write changes nothing; a write of unknown
// outcome leaves one pending.
func incrementModel(init []regState) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} {
			out := make([]interface{}, len(init))
			for i, s := range init {
				out[i] = s
			}
			return out
		},
		Step: func(state, input, output interface{}) []interface{} {
			st := state.(regState)
			if p, ok := input.(probe); ok {
				if st == p.want || (st.pending && p.want == regState{v: st.v + 1}) {
					return []interface{}{p.want}
				}
				return nil
			}
			s := output.(section)
			var out []interface{}
			try := func(v int64, pending bool) {
				if s.Read != v {
					return
				}
				switch s.Write {
				case history.Accepted:
					out = append(out, regState{v: v + 1})
				case history.Unknown:
					out = append(out, regState{v: v, pending: true})
				default: // rejected, or a read with no write
					out = append(out, regState{v: v, pending: pending})
				}
			}
			try(st.v, st.pending)
			if st.pending {
				try(st.v+1, false) // the pending write lands first
			}
			return out
		},
		Hash: func(state interface{}) uint64 {
			s := state.(regState)
			h := uint64(s.v) << 1
			if s.pending {
				h |= 1
			}
			return h
		},
		DescribeOperation: func(input, output interface{}) string {
			if p, ok := input.(probe); ok {
				return "end of this piece: " + describeState(p.want)
			}
			s := output.(section)
			if s.Write == "" {
				return fmt.Sprintf("read %d, no write", s.Read)
			}
			return fmt.Sprintf("read %d, write %d %s", s.Read, s.Read+1, s.Write)
		},
		DescribeState:             func(state interface{}) string { return describeState(state.(regState)) },
		DescribeOperationMetadata: func(m interface{}) string { return fmt.Sprint(m) },
	}
	return nm.ToModel()
}

func describeState(s regState) string {
	if s.pending {
		return fmt.Sprintf("%d (a write of %d may still land)", s.v, s.v+1)
	}
	return fmt.Sprint(s.v)
}

// operations turns a register's sections into porcupine operations. Metadata (who, which
// section) is only for the visualization: l is nil when checking.
func operations(sections []section, ids map[int32]int, l *Log) []porcupine.Operation {
	out := make([]porcupine.Operation, len(sections))
	for i, s := range sections {
		out[i] = porcupine.Operation{ClientId: ids[s.client], Call: s.call, Output: s, Return: s.ret}
		if l != nil {
			out[i].Metadata = fmt.Sprintf("%s cs %d", l.str(s.client), s.cs)
		}
	}
	return out
}

// visualizeBudget bounds porcupine's search for the page of one register.
const visualizeBudget = 3 * time.Second

// Visualize writes porcupine's HTML view of one register to path: the piece of its history the
// last Check found not linearizable (or could not decide in time), with the faults during it,
// annotated with label's words (nil: kind and target). A register without such a piece has no
// page: porcupine's view of a whole long run would be tens of megabytes that no browser opens
// comfortably, and shows nothing wrong.
func (l *Log) Visualize(register, path string, label func(Fault) string) error {
	p := l.pieces[register]
	if p == nil {
		return fmt.Errorf("visualize register %q: the last check found nothing to show", register)
	}
	model := incrementModel(p.init)
	// Porcupine searches again to record what it tried; a piece it could not decide in time
	// would take as long again, so this search has a budget of its own (the page then shows
	// what it got through).
	_, info := porcupine.CheckOperationsVerbose(model, operations(p.sections, p.ids, l), visualizeBudget)
	var faults []Fault
	for _, f := range l.Faults() {
		if f.End >= p.start && f.Start <= p.end {
			faults = append(faults, f)
		}
	}
	info.AddAnnotations(faultAnnotations(faults, label))
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return fmt.Errorf("visualize register %q: %w", register, err)
	}
	return nil
}

// Visualize checks events and writes porcupine's view of the piece of register's history that
// is not linearizable (see Log.Visualize).
func Visualize(events []history.Event, register, path string, label func(Fault) string) error {
	l := FromEvents(events)
	v := l.Check(Options{})
	if r, ok := v.Registers[register]; !ok || !r.Applicable {
		return fmt.Errorf("visualize register %q: no critical section accessed it", register)
	}
	return l.Visualize(register, path, label)
}

// faultAnnotations shows the nemesis's actions in porcupine's view, one row per target, so a
// broken linearization can be read against the pause or partition that caused it.
func faultAnnotations(faults []Fault, label func(Fault) string) []porcupine.Annotation {
	if label == nil {
		label = func(f Fault) string { return f.Kind + " " + f.Target }
	}
	out := make([]porcupine.Annotation, 0, len(faults))
	for _, f := range faults {
		details := fmt.Sprintf("%s for %s", label(f), Human(time.Duration(f.End-f.Start)))
		if f.Point != "" {
			details += " (at " + f.Point + ")"
		}
		if f.Open {
			details += "; not healed before the end of the run"
		}
		out = append(out, porcupine.Annotation{
			Tag:             "nemesis " + f.Target,
			Start:           f.Start,
			End:             f.End,
			Description:     f.Kind,
			Details:         details,
			BackgroundColor: "#f6d365",
		})
	}
	return out
}
