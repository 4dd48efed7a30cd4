package checker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/history/synth"
)

// A run that proves nothing is said to be inconclusive, with the reason, and fails any expect
// block, even one that asks only what such a run would show (mutual exclusion held).
func TestARunThatProvesNothingIsInconclusive(t *testing.T) {
	holdsOnly := Expect{MutualExclusion: "holds"}
	tests := []struct {
		name    string
		history *builder
		expect  Expect
		want    string // in the reason; "" = conclusive
	}{
		{
			name:    "nobody ever tried",
			history: newHistory().start(0).end(1000),
			expect:  holdsOnly,
			want:    "no client ever tried to acquire the lock",
		},
		{
			name: "the lock service never answered",
			history: newHistory().start(0).
				op("client-1", history.Acquire, 10, 2010, history.Info, func(e *history.Event) {
					e.Error = "dial tcp 127.0.0.1:6379: connect: " +
						"connection refused"
				}).
				op("client-2", history.Acquire, 12, 2012, history.Info, func(e *history.Event) { e.Error = "dial tcp: i/o timeout" }).
				end(2100),
			expect: holdsOnly,
			want:   "the lock service never answered (2 attempts, every one an error, the first: dial tcp 127.0.0.1:6379: connect: connection refused)",
		},
		{
			name:    "every attempt refused as busy",
			history: newHistory().start(0).acquireFails("client-1", 10, 3000, 1000).end(3100),
			expect:  holdsOnly,
			want:    "no client ever acquired the lock (2 attempts)",
		},
		{
			name:    "fewer acquisitions than the scenario's minimum",
			history: newHistory().start(0).hold("client-1", 10, 20).hold("client-2", 30, 40).end(100),
			expect:  Expect{MutualExclusion: "holds", Liveness: &LivenessExpect{MinAcquisitions: ptr(3)}},
			want:    "only 2 acquisitions, fewer than the 3 the scenario needs",
		},
		{
			name:    "enough acquisitions: conclusive",
			history: newHistory().start(0).hold("client-1", 10, 20).hold("client-2", 30, 40).hold("client-1", 50, 60).end(100),
			expect:  Expect{MutualExclusion: "holds", Liveness: &LivenessExpect{MinAcquisitions: ptr(3)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.history.build(), Options{})
			reason := tt.expect.Inconclusive(v)
			mismatches := tt.expect.Match(v)
			if tt.want == "" {
				if reason != "" || len(mismatches) != 0 {
					t.Fatalf("conclusive run: reason %q, mismatches %v", reason, mismatches)
				}
				return
			}
			if !strings.Contains(reason, tt.want) {
				t.Fatalf("reason %q, want it to contain %q", reason, tt.want)
			}
			if len(mismatches) == 0 || mismatches[0].Field != "inconclusive" || mismatches[0].Got != reason {
				t.Fatalf("an inconclusive run passed its expect block: %v", mismatches)
			}
			if !v.MutualExclusion.Holds {
				t.Fatalf("the test's history violates mutual exclusion")
			}
		})
	}
}

// Stuck means the lock was never freed again while someone wanted it. A waiter that gave up and
// never asked again does not make a lock freed later look stuck; one that keeps asking does.
func TestAWaiterThatGaveUpDoesNotKeepAFreedLockStuck(t *testing.T) {
	// client-1 holds from 10ms to 5s (a long pause, say). client-2 tries for 2s, gives up at
	// 2.01s and never tries again. The lock is free from 5s to the end at 9s: nobody wants it.
	gaveUp := newHistory().start(0).hold("client-1", 10, 5000).
		op("client-2", history.Acquire, 10, 2010, history.Fail, nil).end(9000).build()
	l := Check(gaveUp, Options{StuckAfter: time.Second}).Liveness
	if l.Stuck {
		t.Fatalf("a lock freed after its only waiter gave up is called stuck: %+v", l)
	}
	// The same, but client-2 keeps asking after each failure and is refused until its last try
	// at 8s: from 5s nobody holds the lock and a client wants it in vain. That is stuck.
	keptAsking := newHistory().start(0).hold("client-1", 10, 5000).
		acquireFails("client-2", 10, 9000, 2000).end(9000).build()
	l = Check(keptAsking, Options{StuckAfter: time.Second}).Liveness
	if !l.Stuck {
		t.Fatalf("a waiter asking until the end of the run and never getting a free lock: not stuck? %+v", l)
	}
	// A waiter that gave up and did something else (here: it died) stops wanting when it gave up.
	died := newHistory().start(0).hold("client-1", 10, 5000).
		op("client-2", history.Acquire, 10, 2010, history.Fail, nil).crash("client-2", 6000).end(9000).build()
	if l := Check(died, Options{StuckAfter: time.Second}).Liveness; l.Stuck || l.LongestUnavailable > time.Millisecond { // 1ms: client-1's own wait
		t.Fatalf("a waiter that gave up before the lock was freed: %+v", l)
	}
}

// No more updates are lost than were acknowledged; a register that ends below where it started
// says so on its own line, not as thousands of lost updates.
func TestLostUpdatesNeverExceedTheAcknowledgedOnes(t *testing.T) {
	start := func(b *builder, initial int64) *builder {
		return b.add(history.Event{Time: 0, Process: history.Controller, Type: history.Note, F: history.Start,
			Registers: map[string]history.Register{"unfenced": {Value: initial}}})
	}
	// Two increments from 10 acknowledged; the register then reads 3 (its storage lost data).
	b := start(newHistory(), 10).acquire("client-1", 1, 2).
		increment("client-1", 1, 3, accepted("unfenced", 10)).increment("client-1", 2, 5, accepted("unfenced", 11)).
		release("client-1", 7, 8).final(20, map[string]int64{"unfenced": 3}).end(30)
	v := Check(b.build(), Options{})
	r := v.Registers["unfenced"]
	if r.AckedIncrements != 2 || r.LostUpdates != 2 || r.FinalBelowInitial != 7 {
		t.Fatalf("acked %d, lost %d, below initial %d; want 2, 2, 7", r.AckedIncrements, r.LostUpdates, r.FinalBelowInitial)
	}
	if !strings.Contains(v.Summary, "ended 7 below its initial value") {
		t.Errorf("summary %q does not say the register went backwards", v.Summary)
	}
	var table bytes.Buffer
	_ = Table(v, &table)
	if !strings.Contains(table.String(), "3 (7 below the initial 10)") {
		t.Errorf("table does not say the register went backwards:\n%s", table.String())
	}
	// One increment lost of two: the usual case stays as it was.
	b = start(newHistory(), 10).acquire("client-1", 1, 2).
		increment("client-1", 1, 3, accepted("unfenced", 10)).increment("client-1", 2, 5, accepted("unfenced", 11)).
		release("client-1", 7, 8).final(20, map[string]int64{"unfenced": 11}).end(30)
	r = Check(b.build(), Options{}).Registers["unfenced"]
	if r.LostUpdates != 1 || r.FinalBelowInitial != 0 {
		t.Fatalf("lost %d, below initial %d; want 1, 0", r.LostUpdates, r.FinalBelowInitial)
	}
}

// A write whose outcome the client never learned, early in a long run, no longer keeps the rest
// of the history in one piece for porcupine: the verdict is exact either way and the cost stays
// linear. (Before, such a history of a few hundred thousand events took gigabytes.)
func TestAnEarlyUnknownWriteIsJudgedExactlyInALongHistory(t *testing.T) {
	for _, landed := range []bool{true, false} {
		var buf bytes.Buffer
		if _, err := synth.Write(&buf, synth.Options{Events: 60000, UnknownAt: 0.01, UnknownLanded: landed}); err != nil {
			t.Fatal(err)
		}
		events, err := history.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		v := Check(events, Options{})
		for name, r := range v.Registers {
			if r.Linearizable != Yes || r.WritesUnknown != 1 || r.Piece != nil {
				t.Fatalf("landed=%v: %s: %+v", landed, name, r)
			}
		}
		// The same history with one stale read far after the unknown write: found.
		buf.Reset()
		if _, err := synth.Write(&buf, synth.Options{Events: 60000, UnknownAt: 0.01, UnknownLanded: landed, StaleReadAt: 0.8}); err != nil {
			t.Fatal(err)
		}
		events, _ = history.Decode(&buf)
		v = Check(events, Options{})
		if r := v.Registers["unfenced"]; r.Linearizable != No || r.Piece == nil || r.Piece.Sections > 4*minSegment {
			t.Fatalf("landed=%v: a stale read after an early unknown write: %+v", landed, r)
		}
		if r := v.Registers["fenced-rw"]; r.Linearizable != Yes {
			t.Fatalf("landed=%v: fenced-rw, untouched by the stale read: %+v", landed, r)
		}
	}
}

// A write its client gave up on (timed out, outcome unknown) that the resource's own log shows
// applied between the next holder's read and its write is an update lost, though no client was
// told it happened; the same timed-out write with no record of landing is not.
func TestAWriteThatLandedAfterItsClientGaveUpCountsWhenLost(t *testing.T) {
	run := func(landed bool) RegisterVerdict {
		b := newHistory().start(0).acquire("client-1", 0, 1).
			read("client-1", 1, 2, 3, accepted("unfenced", 0)).
			write("client-1", 1, 4, 1004, unknown("unfenced", 1)). // held back; its client timed out
			release("client-1", 1005, 1006).acquire("client-2", 1005, 1007).
			read("client-2", 1, 1008, 1009, accepted("unfenced", 0)).
			write("client-2", 1, 1100, 1101, accepted("unfenced", 1)).
			release("client-2", 1102, 1103)
		resourceNote := func(t float64, f string, cs int64, client string, v int64) {
			b.add(history.Event{Time: ms(t), Process: history.Resource, Type: history.Note, F: f, CS: cs, Target: client,
				Registers: map[string]history.Register{"unfenced": {Value: v, Status: history.Accepted}}})
		}
		resourceNote(2.5, history.Read, 1, "client-1", 0)
		resourceNote(1008.5, history.Read, 1, "client-2", 0)
		if landed {
			resourceNote(1009.5, history.Write, 1, "client-1", 1) // inside client-2's read-modify-write
		}
		resourceNote(1100.5, history.Write, 1, "client-2", 1)
		return Check(b.final(1200, map[string]int64{"unfenced": 1}).end(1300).build(), Options{}).Registers["unfenced"]
	}
	if r := run(true); r.LandedUnknown != 1 || r.LostUpdates != 1 {
		t.Errorf("the late write in the resource's log: landed %d, lost %d; want 1, 1", r.LandedUnknown, r.LostUpdates)
	}
	if r := run(false); r.LandedUnknown != 0 || r.LostUpdates != 0 {
		t.Errorf("no record of the late write: landed %d, lost %d; want 0, 0", r.LandedUnknown, r.LostUpdates)
	}
}
