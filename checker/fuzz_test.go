package checker

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/synth"
)

// fuzzBudget bounds porcupine per register: an adversarial history can make its search
// exponential, and the answer must then be "unknown", in time, not a hang.
const fuzzBudget = 300 * time.Millisecond

// FuzzCheckHistory: any bytes, read as a history file, give a verdict or an error naming the
// line; never a panic or a hang.
//
//	go test -run '^$' -fuzz FuzzCheckHistory -fuzztime 3m ./checker/
func FuzzCheckHistory(f *testing.F) {
	var long bytes.Buffer
	if _, err := synth.Write(&long, synth.Options{Events: 300, UnknownAt: 0.3, Pauses: 2, StaleReadAt: 0.6}); err != nil {
		f.Fatal(err)
	}
	f.Add(long.Bytes())
	f.Add([]byte(`{"t":1,"process":"client-1","type":"invoke","f":"acquire","op":1}` + "\n" +
		`{"t":2,"process":"client-1","type":"ok","f":"acquire","op":1,"token":1}` + "\n" +
		`{"t":3,"process":"nemesis","type":"invoke","f":"kill","target":"client-1","op":1}` + "\n" +
		`{"t":4,"process":"nemesis","type":"ok","f":"kill","target":"client-1","op":1}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := newLog()
		err := history.Scan(bytes.NewReader(data), func(_ int, e *history.Event) error {
			l.add(e)
			return nil
		})
		if err != nil {
			var le *history.LineError
			if !errors.As(err, &le) {
				t.Fatalf("an error naming no line: %v", err)
			}
			return
		}
		l.finish()
		checkInvariants(t, l, l.Check(Options{LinearizabilityTimeout: fuzzBudget}))
	})
}

// FuzzCheckEvents: any sequence of events, built in memory (so past the reader's checks: ops
// without invokes, completions of another kind, deaths of strangers, times out of order), gives
// a verdict; never a panic or a hang.
//
//	go test -run '^$' -fuzz FuzzCheckEvents -fuzztime 3m ./checker/
func FuzzCheckEvents(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 2, 1, 1, 1, 0, 1, 2, 1, 2, 1, 0, 0, 3, 1, 3, 2, 0, 2, 3, 1, 3, 2})
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps"))
	f.Fuzz(func(t *testing.T, data []byte) {
		events := fuzzEvents(data)
		l := FromEvents(events)
		v := l.Check(Options{LinearizabilityTimeout: fuzzBudget})
		checkInvariants(t, l, v)
		for _, reg := range []string{"unfenced", "fenced-rw"} {
			if r, ok := v.Registers[reg]; ok && r.Piece != nil {
				if err := l.Visualize(reg, t.TempDir()+"/v.html", nil); err != nil {
					t.Fatalf("visualize %s: %v", reg, err)
				}
			}
		}
	})
}

// fuzzEvents reads 6 bytes per event: process, type, operation, op number, time step, value.
func fuzzEvents(data []byte) []history.Event {
	procs := []string{"client-1", "client-2", "client-3", history.Nemesis, history.Controller, history.Resource}
	types := []history.Type{history.Invoke, history.OK, history.Fail, history.Info, history.Note}
	fs := []string{history.Acquire, history.Release, history.Read, history.Write, history.Lost, history.Crash,
		history.Kill, history.Pause, history.Start, history.End, history.Final, history.Reacquire}
	statuses := []string{history.Accepted, history.Rejected, history.Unknown, ""}
	var out []history.Event
	var t int64
	for i := 0; i+6 <= len(data); i += 6 {
		b := data[i : i+6]
		t += int64(b[4]%16) - 2 // sometimes backwards
		e := history.Event{Time: t, Process: procs[int(b[0])%len(procs)], Type: types[int(b[1])%len(types)],
			F: fs[int(b[2])%len(fs)], Op: int64(b[3] % 4), CS: int64(b[3] % 3), Target: procs[int(b[5])%3]}
		if b[5]%2 == 0 {
			e.Token = history.TokenOf(int64(b[5] % 5))
		}
		if e.F == history.Read || e.F == history.Write || e.F == history.Final || e.F == history.Start {
			e.Registers = map[string]history.Register{
				"unfenced":  {Value: int64(b[5] % 4), Status: statuses[int(b[3]>>2)%len(statuses)]},
				"fenced-rw": {Value: int64(b[4] % 3), Status: statuses[int(b[5]>>3)%len(statuses)]},
			}
		}
		if b[1]&0x80 != 0 {
			e.Role = "read"
		}
		out = append(out, e)
	}
	return out
}

// checkInvariants are what any verdict must satisfy.
func checkInvariants(t *testing.T, l *Log, v Verdict) {
	t.Helper()
	if v.Events != l.Events() {
		t.Fatalf("verdict counts %d events, the history has %d", v.Events, l.Events())
	}
	if v.MutualExclusion.Holds != (len(v.MutualExclusion.Windows) == 0) {
		t.Fatalf("mutual exclusion %v with %d windows", v.MutualExclusion.Holds, len(v.MutualExclusion.Windows))
	}
	for name, r := range v.Registers {
		if r.LostUpdates < 0 || r.LostUpdates > r.AckedIncrements {
			t.Fatalf("%s: %d lost updates of %d acknowledged", name, r.LostUpdates, r.AckedIncrements)
		}
		switch r.Linearizable {
		case Yes, No, Unknown, NotApplicable:
		default:
			t.Fatalf("%s: linearizable %q", name, r.Linearizable)
		}
		if r.Linearizable == No && r.Piece == nil {
			t.Fatalf("%s: not linearizable, but no piece to show", name)
		}
	}
	if v.Liveness.Acquisitions == 0 && v.Inconclusive == "" {
		t.Fatalf("no acquisition, yet conclusive: %+v", v)
	}
	if v.Liveness.LongestUnavailable < 0 || v.Liveness.StuckFor < 0 {
		t.Fatalf("negative durations: %+v", v.Liveness)
	}
}
