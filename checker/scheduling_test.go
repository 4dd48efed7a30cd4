package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// late writes a Late note: p woke at t (ms), lateMs later than it asked.
func (b *builder) late(p string, t, lateMs float64) *builder {
	return b.add(history.Event{Time: ms(t), Process: p, Type: history.Note, F: history.Late, Duration: ms(lateMs)})
}

// A run whose clients woke late says so, with the latest wake-up outside the faults on its client;
// a wake-up made late by a pause of that client does not count, one during another client's
// pause does; a run with no late wake-up has no Scheduling.
func TestSchedulingWeighsLateWakeUpsOutsideTheClientsOwnFaults(t *testing.T) {
	b := newHistory().start(0).
		hold("client-1", 10, 200).hold("client-2", 210, 400).
		pause("client-1", 500, 1500).
		late("client-1", 1520, 900). // slept through its own pause: not the machine
		late("client-2", 1100, 120). // during client-1's pause, but client-2 was not paused
		late("client-2", 1800, 40).
		end(2000)
	v := Check(b.build(), Options{})
	s := v.Scheduling
	if s == nil {
		t.Fatal("no Scheduling for a run whose client-2 woke 120 ms late")
	}
	if s.Worst != 120*time.Millisecond || s.Client != "client-2" || s.Offset != 1100*time.Millisecond || s.Wakes != 2 {
		t.Errorf("Scheduling %+v, want client-2's 120ms at 1.1s and 2 wake-ups (client-1's paused one left out)", *s)
	}
	if !strings.Contains(v.Summary, "the machine woke client-2 120ms late at 1.1s (2 late wake-up(s) outside faults)") {
		t.Errorf("summary %q does not say how late the machine woke client-2", v.Summary)
	}

	quiet := newHistory().start(0).hold("client-1", 10, 200).pause("client-1", 300, 800).late("client-1", 820, 500).end(1000)
	if v := Check(quiet.build(), Options{}); v.Scheduling != nil || strings.Contains(v.Summary, "late") {
		t.Errorf("only a wake-up its own pause explains: Scheduling %+v, summary %q; want none", v.Scheduling, v.Summary)
	}
}
