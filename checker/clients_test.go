package checker

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// cycles records a client holding again and again: acquired every `every` ms from `from` until
// `to`, each hold released after `hold` ms (acquire invoked 1 ms before it succeeds).
func (b *builder) cycles(p string, from, to, every, hold float64) *builder {
	for t := from; t+hold < to; t += every {
		b.hold(p, t, t+hold)
	}
	return b
}

func (b *builder) crashNode(node string, from, to float64) *builder {
	b.add(history.Event{Time: ms(from), Process: history.Nemesis, Type: history.Invoke, F: history.Crash, Target: node, Op: 1})
	return b.add(history.Event{Time: ms(to), Process: history.Nemesis, Type: history.OK, F: history.Crash, Target: node, Op: 1})
}

// A client that never gets the lock again while the other gets it again and again (a library
// whose local "acquired" flag outlived its lock: every acquire fails at once) is starved, and the
// run is starved; a client that loses a few races and then wins is not.
func TestStarvedClientVersusOneThatLostRaces(t *testing.T) {
	starved := newHistory().start(0).hold("client-1", 10, 100).
		cycles("client-2", 150, 7000, 100, 60).
		acquireFails("client-1", 1000, 7000, 50).end(7000).build()
	v := Check(starved, Options{})
	c := v.Liveness.Clients[0]
	if c.Client != "client-1" || c.Starved == nil || c.Starved.Served || c.Starved.By < 55 || c.Starved.Length < 5800*time.Millisecond {
		t.Fatalf("starved client: %+v (starved %+v), want client-1 starved for about 6 s by 60 acquisitions, never served", c, c.Starved)
	}
	if got := v.Liveness.StarvedClients(); len(got) != 1 || got[0] != "client-1" {
		t.Errorf("StarvedClients = %v, want [client-1]", got)
	}
	if j := Judge(v); j.Outcome != Starved {
		t.Errorf("outcome %s, want starved", j.Outcome)
	}
	// client-1 held the lock once before its last wait: that wait was not served again, and
	// "never served" would say it never held it.
	for _, want := range []string{"client-1 starved (passed over", "not served again"} {
		if h := Headline(v); !strings.Contains(h, want) {
			t.Errorf("headline %q lacks %q", h, want)
		}
	}
	if h := Headline(v); strings.Contains(h, "never served") {
		t.Errorf("headline %q says never served of a client that held the lock once", h)
	}
	var table strings.Builder
	Table(v, &table)
	if s := table.String() + strings.Join(Sentences(v), " "); strings.Contains(s, "never served") || !strings.Contains(s, "client-1 at 1.00 s, not served again") {
		t.Errorf("the table and sentences say never served of client-1, or not its worst wait:\n%s", s)
	}
	never := Check(newHistory().start(0).cycles("client-2", 150, 7000, 100, 60).
		acquireFails("client-1", 1000, 7000, 50).end(7000).build(), Options{})
	if h := Headline(never); !strings.Contains(h, "client-1 starved (passed over") || !strings.Contains(h, "never served") {
		t.Errorf("headline %q: want client-1 starved and never served (it never held the lock)", h)
	}
	if s := strings.Join(Sentences(v), " "); !strings.Contains(s, "client-1 was starved: it asked for the lock in vain for") {
		t.Errorf("sentences do not say who was starved: %s", s)
	}

	// Three clients that poll: client-3 loses five hand-overs in a row, then wins; the others
	// take turns. Passed over, not starved.
	races := newHistory().start(0)
	tm := 10.0
	for i := 0; i < 60; i++ {
		p := []string{"client-1", "client-2"}[i%2]
		if i%6 == 5 {
			p = "client-3"
		}
		races.hold(p, tm, tm+80)
		tm += 100
	}
	for t0 := 0.0; t0 < tm; t0 += 100 {
		races.op("client-3", history.Acquire, t0+20, t0+30, history.Fail, nil)
	}
	v = Check(races.end(tm+100).build(), Options{})
	if got := v.Liveness.StarvedClients(); len(got) != 0 {
		t.Errorf("clients that lost a few races: starved %v, want none", got)
	}
	if w := v.Liveness.LongestPassedOver(); w.PassedOver.By < 4 || w.PassedOver.Length < 400*time.Millisecond {
		t.Errorf("longest passed over %+v, want a stretch of at least 4 acquisitions of others", w)
	}
	if j := Judge(v); j.Outcome != Safe {
		t.Errorf("lost races: outcome %s, want safe", j.Outcome)
	}
}

// The bounds: a stretch must be longer than StarvedAfter and hold more acquisitions of others than
// bad luck explains (luckStreak). Faults stop the clock.
func TestStarvationBounds(t *testing.T) {
	base := func() *builder {
		return newHistory().start(0).hold("client-1", 10, 100).cycles("client-2", 150, 7000, 100, 60)
	}
	if v := Check(base().acquireFails("client-1", 1000, 7000, 50).end(7000).build(), Options{StarvedAfter: 8 * time.Second}); len(
		v.Liveness.StarvedClients(),
	) != 0 {
		t.Errorf("passed over 6 s with StarvedAfter 8s: starved %v", v.Liveness.StarvedClients())
	}
	// Few hand-overs: 4 slow holds of client-2 in 4.4 s while client-1 asks: two clients, so
	// losing four in a row is one chance in sixteen.
	slow := newHistory().start(0).hold("client-1", 10, 100).cycles("client-2", 150, 4600, 1100, 1000).
		acquireFails("client-1", 120, 4600, 50).end(4600).build()
	v := Check(slow, Options{StarvedAfter: time.Second})
	if len(v.Liveness.StarvedClients()) != 0 || v.Liveness.LongestPassedOver().PassedOver.Length < 3*time.Second {
		t.Errorf(
			"passed over 4 times in 4 s: %+v, want passed over 3 s or more and not starved (luck bound %d)",
			v.Liveness.Clients,
			v.Liveness.StarvedBy,
		)
	}
	// Paused from 1 s to 6.5 s, then served at once: the stretch restarts when the pause ends.
	paused := base().acquireFails("client-1", 1000, 6500, 50).pause("client-1", 1000, 6500).
		acquire("client-1", 6505, 6560).release("client-1", 6600, 6601).end(7000).build()
	v = Check(paused, Options{})
	if got := v.Liveness.StarvedClients(); len(got) != 0 {
		t.Errorf("a paused client passed over while paused: starved %v, want none", got)
	}
	// The luck bound: two clients and 61 hand-overs: 17 in a row; four clients and 150: 47.
	for _, c := range []struct{ n, h, want int }{{2, 61, 17}, {4, 150, 47}, {1, 100, 1}} {
		if got := luckStreak(c.n, c.h); got != c.want {
			t.Errorf("luckStreak(%d, %d) = %d, want %d", c.n, c.h, got, c.want)
		}
	}
}

// A lock that hands itself out once in six seconds while clients ask all along barely serves:
// starved, even though a client did get it and it was not stuck at the end. A busy lock is not.
func TestBarelyServedLock(t *testing.T) {
	barely := newHistory().start(0).
		acquireFails("client-1", 0, 6000, 100).acquireFails("client-2", 5, 6000, 100).
		hold("client-3", 3000, 3100).acquireFails("client-3", 3200, 6000, 100).
		hold("client-1", 5990, 5998).end(6000).build()
	v := Check(barely, Options{})
	if !v.Liveness.BarelyServed || v.Liveness.RefusedShare < 0.9 || v.Liveness.Stuck {
		t.Fatalf("barely served: %+v, want refused over 90%% of the run, not stuck", v.Liveness)
	}
	if j := Judge(v); j.Outcome != Starved {
		t.Errorf("outcome %s, want starved", j.Outcome)
	}
	if h := Headline(v); !strings.Contains(h, "askers refused") {
		t.Errorf("headline %q does not say askers were refused", h)
	}
	busy := newHistory().start(0).cycles("client-1", 10, 6000, 200, 100).cycles("client-2", 110, 6000, 200, 95).end(6000).build()
	if v := Check(busy, Options{}); v.Liveness.BarelyServed || v.Liveness.RefusedShare > 0.1 {
		t.Errorf("busy lock: refused share %.2f, barely served %v", v.Liveness.RefusedShare, v.Liveness.BarelyServed)
	}
	// Slow hand-overs are not refusals: the lock lies free 300 ms between holds of 200 ms while
	// the other client asks, 60% of the run, but never for longer than half a second.
	slow := newHistory().start(0)
	for t0 := 10.0; t0+500 < 6000; t0 += 1000 {
		slow.acquire("client-1", t0-300, t0).release("client-1", t0+200, t0+201).
			acquire("client-2", t0+200, t0+500).release("client-2", t0+700, t0+701)
	}
	if v := Check(slow.end(6000).build(), Options{}); v.Liveness.BarelyServed || v.Liveness.RefusedShare > 0 {
		t.Errorf("slow hand-overs: refused share %.2f, want 0", v.Liveness.RefusedShare)
	}
	// A lock node down for most of the run refuses rightly: that time is left out.
	down := newHistory().start(0).
		acquireFails("client-1", 0, 5500, 100).acquireFails("client-2", 5, 5500, 100).crashNode("n1", 100, 5500).
		cycles("client-1", 5501, 6000, 100, 50).cycles("client-2", 5552, 6000, 100, 48).end(6000).build()
	if v := Check(down, Options{}); v.Liveness.BarelyServed {
		t.Errorf("refused only while the lock node was down: refused share %.2f, want it not barely served", v.Liveness.RefusedShare)
	}
}

func TestClientAndRefusalExpectations(t *testing.T) {
	src := `
liveness: {starved_after: 4s, max_starved_clients: 0, max_passed_over: 2s, max_refused_share: 0.5}
fairness: {max_unfair_overtakes: 0}
`
	var e Expect
	if err := yaml.Unmarshal([]byte(src), &e); err != nil {
		t.Fatal(err)
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	if e.StarvedAfter().D() != 4*time.Second {
		t.Errorf("StarvedAfter() = %s, want 4s", e.StarvedAfter())
	}
	starved := newHistory().start(0).hold("client-1", 10, 100).
		cycles("client-2", 150, 7000, 100, 60).
		acquireFails("client-1", 1000, 7000, 50).end(7000).build()
	v := Check(starved, Options{StarvedAfter: e.StarvedAfter().D()})
	got := map[string]string{}
	for _, m := range e.Match(v) {
		got[m.Field] = m.Got
	}
	if len(got) != 2 || !strings.Contains(got["liveness.max_starved_clients"], "1 (client-1)") ||
		!strings.Contains(got["liveness.max_passed_over"], "client-1 (5.85s from 1.00 s, 59 acquisitions of others, not served again)") {
		t.Errorf("starved run: mismatches %v, want max_starved_clients and max_passed_over", got)
	}
	min1 := Expect{Liveness: &LivenessExpect{ClientsExpect: ClientsExpect{MinStarvedClients: ptr(1), MinRefusedShare: ptr(0.5)}}}
	if m := min1.Match(v); len(m) != 1 || m[0].Field != "liveness.min_refused_share" {
		t.Errorf("min_starved_clients 1 on a starved run, min_refused_share 0.5 on a busy one: %v", m)
	}
	unfair := Verdict{Fairness: Fairness{Acquisitions: 10, Overtakes: 3, Unfair: 2, FirstUnfair: &Overtake{Client: "client-1", By: "client-2"}}}
	if m := e.Match(unfair); len(m) != 1 || m[0].Field != "fairness.max_unfair_overtakes" || !strings.Contains(m[0].Got, "2 of 3 overtakes") {
		t.Errorf("unfair run: %v", m)
	}
	bad := []struct {
		e    Expect
		want string
	}{
		{
			Expect{Liveness: &LivenessExpect{ClientsExpect: ClientsExpect{MaxStarvedClients: ptr(-1)}}},
			"expect.liveness.max_starved_clients: -1 is negative",
		},
		{
			Expect{Liveness: &LivenessExpect{ClientsExpect: ClientsExpect{MaxRefusedShare: ptr(1.5)}}},
			"expect.liveness.max_refused_share: 1.5 is not a share",
		},
		{
			Expect{Liveness: &LivenessExpect{ClientsExpect: ClientsExpect{StarvedAfter: ptr(yamltime.Duration(0))}}},
			"expect.liveness.starved_after: must be longer than 0",
		},
		{
			Expect{Fairness: &FairnessExpect{MaxUnfair: ptr(0), MinUnfair: ptr(1)}},
			"expect.fairness.min_unfair_overtakes: 1 is above max_unfair_overtakes 0",
		},
	}
	for _, b := range bad {
		if err := b.e.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Validate() = %v, want %q", err, b.want)
		}
	}
}
