package checker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// serialIncrements has client-1 take the unfenced register from 0 to n, one section at a time.
func serialIncrements(b *builder, n int) *builder {
	b.acquire("client-1", 1, 2)
	for i := 0; i < n; i++ {
		b.increment("client-1", int64(i+1), float64(3+i), accepted("unfenced", int64(i)))
	}
	return b.release("client-1", float64(3+n), float64(3+n)+0.5)
}

func TestRegisterVerdictsOnKnownHistories(t *testing.T) {
	type want struct {
		linearizable          string
		acked, lost, rejected int
	}
	tests := []struct {
		name     string
		history  *builder
		register string
		want     want
	}{
		{
			name: "serialized increments are linearizable and lose nothing",
			history: newHistory().start(0).
				acquire("client-1", 1, 2).increment("client-1", 1, 3, accepted("unfenced", 0)).release("client-1", 4, 5).
				acquire("client-2", 1, 6).increment("client-2", 1, 7, accepted("unfenced", 1)).release("client-2", 8, 9).
				acquire("client-1", 10, 11).increment("client-1", 2, 12, accepted("unfenced", 2)).release("client-1", 13, 14).
				final(20, map[string]int64{"unfenced": 3}),
			register: "unfenced",
			want:     want{linearizable: Yes, acked: 3},
		},
		{
			name: "two clients read 5 and both write 6: a lost update",
			history: serialIncrements(newHistory().start(0), 5).
				acquire("client-1", 10, 11).acquire("client-2", 10, 12).
				read("client-1", 10, 13, 14, accepted("unfenced", 5)).read("client-2", 1, 15, 16, accepted("unfenced", 5)).
				write("client-1", 10, 17, 18, accepted("unfenced", 6)).write("client-2", 1, 19, 20, accepted("unfenced", 6)).
				final(30, map[string]int64{"unfenced": 6}),
			register: "unfenced",
			want:     want{linearizable: No, acked: 7, lost: 1},
		},
		{
			name:     "a stale write rejected by fencing stays linearizable",
			history:  staleWriteHistory(),
			register: "fenced-write",
			want:     want{linearizable: Yes, acked: 1, rejected: 1},
		},
		{
			name:     "the same stale write on an unfenced register loses an update",
			history:  staleWriteHistory(),
			register: "unfenced",
			want:     want{linearizable: No, acked: 2, lost: 1},
		},
		{
			name: "an unknown write that landed passes, and the final above acked is no loss",
			history: newHistory().start(0).
				acquire("client-1", 1, 2).read("client-1", 1, 3, 4, accepted("unfenced", 0)).
				write("client-1", 1, 5, 30, unknown("unfenced", 1)).release("client-1", 31, 32).
				acquire("client-2", 1, 33).increment("client-2", 1, 40, accepted("unfenced", 1)).release("client-2", 41, 42).
				final(50, map[string]int64{"unfenced": 2}),
			register: "unfenced",
			want:     want{linearizable: Yes, acked: 1},
		},
		{
			name: "an unknown write that did not land passes",
			history: newHistory().start(0).
				acquire("client-1", 1, 2).read("client-1", 1, 3, 4, accepted("unfenced", 0)).
				write("client-1", 1, 5, 30, unknown("unfenced", 1)).release("client-1", 31, 32).
				acquire("client-2", 1, 33).increment("client-2", 1, 40, accepted("unfenced", 0)).release("client-2", 41, 42).
				final(50, map[string]int64{"unfenced": 1}),
			register: "unfenced",
			want:     want{linearizable: Yes, acked: 1},
		},
		{
			name: "a write cut short by a crash has an unknown outcome",
			history: newHistory().start(0).
				acquire("client-1", 1, 2).read("client-1", 1, 3, 4, accepted("unfenced", 0)).
				write("client-1", 1, 5, -1).crash("client-1", 6).
				acquire("client-2", 1, 33).increment("client-2", 1, 40, accepted("unfenced", 0)).
				increment("client-2", 2, 45, accepted("unfenced", 1)).release("client-2", 46, 47).
				acquire("client-3", 1, 48).increment("client-3", 1, 49, accepted("unfenced", 2)).release("client-3", 50, 51).
				final(60, map[string]int64{"unfenced": 3}),
			register: "unfenced",
			want:     want{linearizable: Yes, acked: 3},
		},
		{
			// A paused server runs the write after the client gave up (info at 30): it lands at
			// 60, between a read of 0 at 40 and a read of 1 at 70.
			name: "an unknown write may land long after the client gave up on it",
			history: newHistory().start(0).
				acquire("client-1", 1, 2).read("client-1", 1, 3, 4, accepted("unfenced", 0)).
				write("client-1", 1, 5, 30, unknown("unfenced", 1)).release("client-1", 31, 32).
				read("client-2", 1, 40, 41, accepted("unfenced", 0)).crash("client-2", 42).
				read("client-3", 1, 70, 71, accepted("unfenced", 1)).crash("client-3", 72).
				final(80, map[string]int64{"unfenced": 1}),
			register: "unfenced",
			want:     want{linearizable: Yes},
		},
		{
			name: "a read with no write must still see the current value",
			history: newHistory().start(0).
				acquire("client-1", 1, 2).read("client-1", 1, 3, 4, accepted("unfenced", 0)).crash("client-1", 5).
				acquire("client-2", 1, 10).increment("client-2", 1, 11, accepted("unfenced", 0)).release("client-2", 12, 13).
				final(20, map[string]int64{"unfenced": 1}),
			register: "unfenced",
			want:     want{linearizable: Yes, acked: 1},
		},
		{
			name: "a read with no write that saw a value never written is flagged",
			history: newHistory().start(0).
				acquire("client-1", 1, 2).read("client-1", 1, 3, 4, accepted("unfenced", 7)).crash("client-1", 5).
				final(20, map[string]int64{"unfenced": 0}),
			register: "unfenced",
			want:     want{linearizable: No},
		},
		{
			name: "a read that missed an acknowledged write is flagged",
			history: newHistory().start(0).
				acquire("client-1", 1, 2).increment("client-1", 1, 3, accepted("unfenced", 0)).release("client-1", 4, 5).
				acquire("client-2", 1, 6).increment("client-2", 1, 7, accepted("unfenced", 0)).release("client-2", 8, 9).
				final(20, map[string]int64{"unfenced": 1}),
			register: "unfenced",
			want:     want{linearizable: No, acked: 2, lost: 1},
		},
		{
			name: "rejected and unknown reads carry no information",
			history: newHistory().start(0).
				read("client-1", 1, 3, 4, rejected("fenced-rw", 99)).
				read("client-2", 1, 5, -1).read("client-3", 1, 6, 7, unknown("fenced-rw", 42)).
				increment("client-4", 1, 10, accepted("fenced-rw", 0)).
				final(20, map[string]int64{"fenced-rw": 1}),
			register: "fenced-rw",
			want:     want{linearizable: Yes, acked: 1, rejected: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(tt.history.build(), Options{}).Registers[tt.register]
			got := want{r.Linearizable, r.AckedIncrements, r.LostUpdates, r.StaleRejected()}
			if got != tt.want {
				t.Errorf("%s: got %+v, want %+v", tt.register, got, tt.want)
			}
			if !r.Applicable || !r.LostUpdatesKnown || r.Final == nil {
				t.Errorf("applicable=%v lost known=%v final=%v, want true, true, set", r.Applicable, r.LostUpdatesKnown, r.Final)
			}
		})
	}
}

// staleWriteHistory is Kleppmann's GC pause: client-1 (token 1) reads, pauses past its lease,
// client-2 (token 2) takes the lock and increments, then client-1 wakes and writes what it read.
func staleWriteHistory() *builder {
	return newHistory().start(0).
		acquireToken("client-1", 9, 10, 1).
		read("client-1", 1, 20, 21, accepted("unfenced", 0), accepted("fenced-write", 0)).
		pause("client-1", 22, 600).
		acquireToken("client-2", 100, 520, 2).
		increment("client-2", 1, 530, accepted("unfenced", 0), accepted("fenced-write", 0)).
		release("client-2", 550, 551).
		write("client-1", 1, 600, 601, accepted("unfenced", 1), rejected("fenced-write", 1)).
		release("client-1", 605, 606).
		final(700, map[string]int64{"unfenced": 1, "fenced-write": 1}).end(700)
}

func TestStaleWriteSummaryTellsTheWholeStory(t *testing.T) {
	s := Check(staleWriteHistory().build(), Options{}).Summary
	for _, want := range []string{
		"client-1 and client-2 both believed they held the lock for 30ms",
		"fenced-write rejected 1 stale access and stayed linearizable",
		"unfenced lost 1 update and was not linearizable",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
}

// hardIllegalHistory is not linearizable, but porcupine must try every order of its many
// concurrent sections with unknown writes before it can say so.
func hardIllegalHistory() []history.Event {
	b := newHistory().start(0)
	for i := 1; i <= 25; i++ {
		p := history.Client(i)
		b.read(p, 1, 1, 2, accepted("unfenced", 0)).write(p, 1, 3, -1)
	}
	return b.read("client-26", 1, 1, 2, accepted("unfenced", 100)).build()
}

func TestPorcupineTimeoutGivesUnknownNotAGuess(t *testing.T) {
	v := Check(hardIllegalHistory(), Options{LinearizabilityTimeout: 20 * time.Millisecond})
	if got := v.Registers["unfenced"].Linearizable; got != Unknown {
		t.Fatalf("linearizable = %q, want %q", got, Unknown)
	}
	if !strings.Contains(v.Summary, "unknown") {
		t.Errorf("summary %q does not say linearizability is unknown", v.Summary)
	}
}

func TestVisualizeWritesPorcupineHTMLForOneRegister(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unfenced.html")
	if err := Visualize(staleWriteHistory().build(), "unfenced", path, nil); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "read 0, write 1 ok") {
		t.Errorf("visualization lacks the described operations (%d bytes)", len(html))
	}
	if err := Visualize(staleWriteHistory().build(), "fenced-rw", path, nil); err == nil {
		t.Error("visualizing a register no section touched should fail")
	}
}
