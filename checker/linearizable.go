package checker

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// incrementModel is a register that critical sections increment. The state is its value. A
// section must read the current value; an accepted write adds one, a rejected write changes
// nothing, and an unknown write may have done either — hence a nondeterministic model.
func incrementModel(initial int64) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{initial} },
		Step: func(state, _, output interface{}) []interface{} {
			v, s := state.(int64), output.(section)
			if s.Read != v {
				return nil
			}
			switch s.Write {
			case history.Accepted:
				return []interface{}{v + 1}
			case history.Unknown:
				return []interface{}{v, v + 1}
			default: // rejected, or a read with no write
				return []interface{}{v}
			}
		},
		Hash: func(state interface{}) uint64 { return uint64(state.(int64)) },
		DescribeOperation: func(_, output interface{}) string {
			s := output.(section)
			if s.Write == "" {
				return fmt.Sprintf("read %d, no write", s.Read)
			}
			return fmt.Sprintf("read %d, write %d %s", s.Read, s.Read+1, s.Write)
		},
		DescribeState:             func(state interface{}) string { return fmt.Sprint(state.(int64)) },
		DescribeOperationMetadata: func(m interface{}) string { return fmt.Sprint(m) },
	}
	return nm.ToModel()
}

// operations turns a register's sections into porcupine operations.
func operations(sections []section, ids map[string]int) []porcupine.Operation {
	out := make([]porcupine.Operation, len(sections))
	for i, s := range sections {
		out[i] = porcupine.Operation{
			ClientId: ids[s.client],
			Call:     s.call,
			Output:   s,
			Return:   s.ret,
			Metadata: fmt.Sprintf("%s cs %d", s.client, s.cs),
		}
	}
	return out
}

// linearizable runs porcupine within the time budget, segment by segment (segments.go); running
// out of time gives Unknown.
func linearizable(sections []section, initial int64, ids map[string]int, budget time.Duration) string {
	return linearizableInSegments(sections, initial, ids, budget)
}

// Visualize writes porcupine's HTML view of one register's critical sections to path: the
// longest linearizable prefixes, and where they break. Faults are annotated with label's words
// (nil: kind and target).
func Visualize(events []history.Event, register, path string, label func(Fault) string) error {
	events = sortedEvents(events)
	ops := clientOps(events)
	r := collectRegisters(ops)[register]
	if r == nil {
		return fmt.Errorf("visualize register %q: no critical section accessed it", register)
	}
	initial := initialValues(events)[register]
	_, info := porcupine.CheckOperationsVerbose(incrementModel(initial), operations(r.sections, clientIDs(ops)), defaultLinearizabilityTimeout)
	info.AddAnnotations(faultAnnotations(Faults(events), label))
	if err := porcupine.VisualizePath(incrementModel(initial), info, path); err != nil {
		return fmt.Errorf("visualize register %q: %w", register, err)
	}
	return nil
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
