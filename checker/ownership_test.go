package checker

import (
	"reflect"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

func TestMutualExclusionFlagsEveryPairThatBelievedItHeldTheLockAtOnce(t *testing.T) {
	type window struct {
		a, b           string
		offset, length float64 // ms
	}
	tests := []struct {
		name    string
		history *builder
		want    []window
		total   float64 // ms
	}{
		{
			name:    "overlapping holders are flagged with their pair, start and length",
			history: newHistory().start(0).hold("client-1", 10, 100).hold("client-3", 50, 200).end(300),
			want:    []window{{"client-1", "client-3", 50, 50}},
			total:   50,
		},
		{
			name:    "serial holders pass, including a hand-over at the same instant",
			history: newHistory().start(0).hold("client-1", 10, 100).hold("client-2", 100, 200).hold("client-3", 250, 300).end(400),
		},
		{
			name: "three holders at once give three pairs, and the total counts shared time once",
			history: newHistory().start(0).hold("client-1", 10, 100).hold("client-2", 20, 60).
				hold("client-3", 40, 80).end(200),
			want: []window{
				{"client-1", "client-2", 20, 40},
				{"client-1", "client-3", 40, 40},
				{"client-2", "client-3", 40, 20},
			},
			total: 60,
		},
		{
			name: "a crashed holder with no release stops believing at the crash",
			history: newHistory().start(0).acquire("client-1", 5, 10).crash("client-1", 50).
				hold("client-2", 60, 100).end(200),
		},
		{
			name: "a killed holder stops believing at the kill",
			history: newHistory().start(0).acquire("client-1", 5, 10).kill("client-1", 50).
				hold("client-2", 60, 100).end(200),
		},
		{
			name: "a holder that never released believes until the end of the run",
			history: newHistory().start(0).acquire("client-1", 5, 10).
				hold("client-2", 60, 100).end(200),
			want:  []window{{"client-1", "client-2", 60, 40}},
			total: 40,
		},
		{
			name: "a paused holder still believes it holds the lock",
			history: newHistory().start(0).acquire("client-1", 5, 10).pause("client-1", 20, 500).
				hold("client-2", 300, 400).release("client-1", 510, 511).end(600),
			want:  []window{{"client-1", "client-2", 300, 100}},
			total: 100,
		},
		{
			name: "an acquire that ended in info is not a belief of holding",
			history: newHistory().start(0).op("client-1", "acquire", 10, 20, "info", nil).
				hold("client-2", 15, 100).end(200),
		},
		{
			name: "a holder that re-acquires at the instant it released keeps one window with the other",
			history: newHistory().start(0).hold("client-1", 10, 100).hold("client-1", 100, 200).
				hold("client-2", 50, 150).end(300),
			want:  []window{{"client-1", "client-2", 50, 100}},
			total: 100,
		},
		{
			name:    "overlaps are measured from the run's start note",
			history: newHistory().start(1000).hold("client-2", 1010, 1100).hold("client-10", 1090, 1200).end(1300),
			want:    []window{{"client-2", "client-10", 90, 10}},
			total:   10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.history.build(), Options{})
			var got []window
			for _, w := range v.MutualExclusion.Windows {
				got = append(got, window{w.Clients[0], w.Clients[1],
					float64(w.Offset) / 1e6, float64(w.Length) / 1e6})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("windows = %v, want %v", got, tt.want)
			}
			if v.MutualExclusion.Holds != (len(tt.want) == 0) {
				t.Errorf("holds = %v with windows %v", v.MutualExclusion.Holds, got)
			}
			if want := time.Duration(ms(tt.total)); v.MutualExclusion.TotalOverlap != want {
				t.Errorf("total overlap = %v, want %v", v.MutualExclusion.TotalOverlap, want)
			}
		})
	}
}

func TestOverlapStartIsTheAbsoluteTimeOfTheLaterAcquire(t *testing.T) {
	v := Check(newHistory().start(1000).hold("client-1", 1010, 1100).hold("client-2", 1050, 1200).build(), Options{})
	if w := v.MutualExclusion.Windows; len(w) != 1 || w[0].Start != ms(1050) {
		t.Fatalf("windows = %+v, want one starting at %d", w, ms(1050))
	}
}

func TestACrashedHolderIntervalEndsAtTheCrash(t *testing.T) {
	events := newHistory().start(0).acquire("client-1", 5, 10).crash("client-1", 50).end(200).build()
	holds := Holds(events)
	want := []Hold{{Client: "client-1", Start: ms(10), End: ms(50), EndedBy: history.Crash}}
	if !reflect.DeepEqual(holds, want) {
		t.Fatalf("holds = %v, want %v", holds, want)
	}
}

func TestAHolderThatNotesItsValidityEndedStopsBelievingAtTheNote(t *testing.T) {
	lost := func(b *builder, at float64) *builder {
		return b.add(history.Event{Time: ms(at), Process: "client-1", Type: history.Note, F: history.Lost})
	}
	events := lost(newHistory().start(0).acquire("client-1", 5, 10), 50).
		acquire("client-2", 60, 70).release("client-1", 100, 101).end(200).build()
	v := Check(events, Options{})
	if !v.MutualExclusion.Holds {
		t.Fatalf("client-1 gave up its belief at 50ms, before client-2 took the lock at 70ms: %+v", v.MutualExclusion)
	}
	// Without the note, the same history is a violation.
	events = newHistory().start(0).acquire("client-1", 5, 10).acquire("client-2", 60, 70).release("client-1", 100, 101).end(200).build()
	if Check(events, Options{}).MutualExclusion.Holds {
		t.Fatal("overlap not flagged without the lost note")
	}
}

func TestReadersMayHoldTogetherButNotWithAWriter(t *testing.T) {
	role := func(r string) func(*history.Event) { return func(e *history.Event) { e.Role = r } }
	b := newHistory().start(0)
	b.op("client-1", history.Acquire, 5, 10, history.OK, role("read"))
	b.op("client-2", history.Acquire, 6, 12, history.OK, role("read"))
	b.release("client-1", 50, 51).release("client-2", 52, 53)
	if v := Check(b.end(200).build(), Options{}); !v.MutualExclusion.Holds {
		t.Fatalf("two readers together flagged: %+v", v.MutualExclusion)
	}
	b = newHistory().start(0)
	b.op("client-1", history.Acquire, 5, 10, history.OK, role("read"))
	b.op("client-2", history.Acquire, 6, 20, history.OK, role("write"))
	b.release("client-1", 50, 51).release("client-2", 52, 53)
	v := Check(b.end(200).build(), Options{})
	if v.MutualExclusion.Holds || len(v.MutualExclusion.Windows) != 1 || v.MutualExclusion.Windows[0].Length != 30*time.Millisecond {
		t.Fatalf("a reader with a writer must be one 30ms window: %+v", v.MutualExclusion)
	}
}
