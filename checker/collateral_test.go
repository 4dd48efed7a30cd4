package checker

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

func (b *builder) releaseFails(p string, inv, done float64) *builder {
	return b.op(p, history.Release, inv, done, history.Fail, func(e *history.Event) { e.Error = "not held" })
}

func (b *builder) nested(p, f string, inv, done float64) *builder {
	return b.op(p, f, inv, done, history.OK, nil)
}

func (b *builder) lost(p string, t float64) *builder {
	return b.add(history.Event{Time: ms(t), Process: p, Type: history.Note, F: history.Lost, Error: "validity ended"})
}

func (b *builder) acquireRead(p string, inv, ok float64, token int64) *builder {
	return b.op(p, history.Acquire, inv, ok, history.OK, func(e *history.Event) { e.Token, e.Role = history.TokenOf(token), history.Read })
}

// A reentrant lock whose inner release frees the whole lock: every outer release fails, though
// nobody else took the lock and no fault touched anyone. The correct design's outer releases
// succeed. Counted per client.
func TestFailedReleasesOfLegitimateHolders(t *testing.T) {
	tenure := func(b *builder, p string, from float64, outerOK bool) {
		b.acquire(p, from-1, from).nested(p, history.Reacquire, from+1, from+2).
			nested(p, history.Rerelease, from+20, from+21)
		if outerOK {
			b.release(p, from+22, from+23)
		} else {
			b.releaseFails(p, from+22, from+23)
		}
	}
	bad, good := newHistory().start(0), newHistory().start(0)
	for i, p := range []string{"client-1", "client-2", "client-1"} {
		tenure(bad, p, float64(10+40*i), false)
		tenure(good, p, float64(10+40*i), true)
	}
	c := Check(bad.end(200).build(), Options{}).Collateral
	if c.FailedReleases != 3 || !reflect.DeepEqual(c.FailedByClient, map[string]int{"client-1": 2, "client-2": 1}) ||
		c.FirstFailedRelease == nil || c.FirstFailedRelease.Client != "client-1" || c.FirstFailedRelease.Op != history.Release {
		t.Errorf("inner release frees the lock: %+v, want 3 failed releases (client-1 2, client-2 1)", c)
	}
	if c := Check(good.end(200).build(), Options{}).Collateral; c.Damaged() {
		t.Errorf("correct reentrant lock: %+v, want no damage", c)
	}
}

// A release that fails after the holder was frozen past its lease, after it recorded losing the
// lock, or after another client took the lock is the lease working: not damage.
func TestFailedReleasesOfStaleHoldersAreNotDamage(t *testing.T) {
	cases := map[string]*builder{
		"paused holder": newHistory().start(0).acquire("client-1", 0, 1).pause("client-1", 2, 50).releaseFails("client-1", 51, 52),
		"lost note":     newHistory().start(0).acquire("client-1", 0, 1).lost("client-1", 30).releaseFails("client-1", 31, 32),
		"taken over": newHistory().start(0).acquire("client-1", 0, 1).acquire("client-2", 5, 20).
			releaseFails("client-1", 30, 31).release("client-2", 40, 41),
		"lock node crashed": newHistory().start(0).acquire("client-1", 0, 1).
			add(history.Event{Time: ms(5), Process: history.Nemesis, Type: history.Invoke, F: history.Crash, Target: "n1", Op: 1}).
			add(history.Event{Time: ms(8), Process: history.Nemesis, Type: history.OK, F: history.Crash, Target: "n1", Op: 1}).
			releaseFails("client-1", 30, 31),
	}
	for name, b := range cases {
		if c := Check(b.end(100).build(), Options{}).Collateral; c.FailedReleases != 0 {
			t.Errorf("%s: %d failed releases counted, want 0", name, c.FailedReleases)
		}
	}
	// A release whose outcome is unknown (a timeout) may have freed the lock: not counted.
	timeout := newHistory().start(0).acquire("client-1", 0, 1).
		op("client-1", history.Release, 30, 40, history.Info, func(e *history.Event) { e.Error = "context deadline exceeded" })
	if c := Check(timeout.end(100).build(), Options{}).Collateral; c.FailedReleases != 0 || c.UnknownReleases != 1 || c.Damaged() {
		t.Errorf("release timed out: %+v, want 1 unknown release and no damage", c)
	}
	// A fault on another client is no excuse.
	b := newHistory().start(0).pause("client-2", 0, 50).acquire("client-1", 0, 1).releaseFails("client-1", 30, 31).
		acquireFails("client-2", 51, 60, 3)
	if c := Check(b.end(100).build(), Options{}).Collateral; c.FailedReleases != 1 {
		t.Errorf("fault on another client: %d failed releases, want 1", c.FailedReleases)
	}
}

// A lock that takes its token before it holds the lock, and keeps it across retries: client-2
// drew token 5 while client-1 (token 6) held; when client-2 finally holds, nobody else does and no
// fault happened, yet the fenced register refuses it. With the correct design the tokens follow
// the holds; a stale holder (frozen past its lease, taken over) refused by fencing is fencing
// working.
func TestLegitimateRejectionsAndTokenAnomalies(t *testing.T) {
	fenced := "fenced-rw"
	bad := newHistory().start(0).
		acquireToken("client-1", 0, 1, 6).increment("client-1", 1, 2, accepted(fenced, 0)).release("client-1", 10, 11).
		acquireToken("client-2", 0, 12, 5).
		read("client-2", 1, 13, 14, rejected(fenced, 1)).release("client-2", 20, 21).
		final(30, map[string]int64{fenced: 1}).end(30)
	v := Check(bad.build(), Options{})
	c := v.Collateral
	if c.LegitRejections != 1 || v.Registers[fenced].LegitRejected != 1 || v.Registers[fenced].StaleRejected() != 0 ||
		c.FirstRejection == nil || c.FirstRejection.Client != "client-2" || c.FirstRejection.Register != fenced {
		t.Errorf("token drawn before holding: %+v / %+v, want 1 legitimate rejection by client-2", c, v.Registers[fenced])
	}
	if c.TokenAnomalies != 1 || c.LowerToken != 1 || c.FirstAnomaly == nil || c.FirstAnomaly.Earlier != "client-1" ||
		c.FirstAnomaly.EarlierToken != 6 {
		t.Errorf("token drawn before holding: %+v, want 1 lower-token anomaly after client-1's 6", c)
	}
	if j := Judge(v); j.Outcome != Damaged {
		t.Errorf("outcome %s, want damaged: %s", j.Outcome, Headline(v))
	}
	for _, want := range []string{"Fencing refused 1 access of clients that held the lock by every record (client-2 1)",
		"client-2 took token 5 at", "after client-1 took token 6"} {
		if s := strings.Join(Sentences(v), " "); !strings.Contains(s, want) {
			t.Errorf("sentences do not say %q:\n%s", want, s)
		}
	}

	// K2 with fencing: client-1 frozen past its lease, client-2 takes the lock with a higher
	// token, client-1 wakes and writes: refused, as it should be.
	good := newHistory().start(0).
		acquireToken("client-1", 0, 1, 1).read("client-1", 1, 2, 3, accepted(fenced, 0)).pause("client-1", 4, 60).
		acquireToken("client-2", 5, 20, 2).increment("client-2", 1, 21, accepted(fenced, 0)).release("client-2", 30, 31).
		write("client-1", 1, 61, 62, rejected(fenced, 1)).releaseFails("client-1", 63, 64).
		final(70, map[string]int64{fenced: 1}).end(70)
	v = Check(good.build(), Options{})
	if c := v.Collateral; c.Damaged() || v.Registers[fenced].StaleRejected() != 1 {
		t.Errorf("stale holder refused: %+v (register %+v), want no damage and 1 stale rejection", c, v.Registers[fenced])
	}
}

// Two holders with the same token, and a writer whose token is below an earlier reader's; two
// readers of a read/write lock are not compared with each other.
func TestTokenAnomalies(t *testing.T) {
	same := newHistory().start(0).acquireToken("client-1", 0, 1, 3).release("client-1", 5, 6).
		acquireToken("client-2", 0, 7, 3).release("client-2", 9, 10).end(20)
	c := Check(same.build(), Options{}).Collateral
	if c.TokenAnomalies != 1 || c.SameToken != 1 || c.LowerToken != 0 {
		t.Errorf("same token twice: %+v, want 1 same-token anomaly", c)
	}
	readers := newHistory().start(0).acquireRead("client-1", 0, 1, 5).acquireRead("client-2", 0, 2, 4).
		release("client-1", 5, 6).release("client-2", 5, 6).end(20)
	if c := Check(readers.build(), Options{}).Collateral; c.TokenAnomalies != 0 {
		t.Errorf("readers out of token order: %+v, want none", c)
	}
	writer := newHistory().start(0).acquireRead("client-1", 0, 1, 5).release("client-1", 5, 6).
		acquireToken("client-2", 0, 7, 4).release("client-2", 9, 10).end(20)
	if c := Check(writer.build(), Options{}).Collateral; c.TokenAnomalies != 1 || c.LowerToken != 1 {
		t.Errorf("writer below an earlier reader: %+v, want 1 lower-token anomaly", c)
	}
	increasing := newHistory().start(0)
	for i := range 5 {
		p := history.Client(i%2 + 1)
		increasing.acquireToken(p, float64(10*i), float64(10*i+1), int64(i+1)).release(p, float64(10*i+5), float64(10*i+6))
	}
	if c := Check(increasing.end(60).build(), Options{}).Collateral; c.Damaged() {
		t.Errorf("increasing tokens: %+v, want no damage", c)
	}
}

// The table shows collateral damage per client only when there is some; the summary line and the
// verdict's JSON carry it too.
func TestCollateralInTableSummaryAndJSON(t *testing.T) {
	b := newHistory().start(0).acquire("client-1", 0, 1).releaseFails("client-1", 10, 11).
		acquire("client-2", 12, 13).releaseFails("client-2", 20, 21).acquire("client-1", 22, 23).releaseFails("client-1", 30, 31)
	v := Check(b.end(40).build(), Options{})
	var out strings.Builder
	if err := Table(v, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "3 (client-1 2, client-2 1)") {
		t.Errorf("table:\n%s", out.String())
	}
	if !strings.Contains(v.Summary, "collateral damage: 3 failed releases") {
		t.Errorf("summary %q", v.Summary)
	}
	js, _ := json.Marshal(v)
	if !strings.Contains(string(js), `"collateral":{"failed_releases":3,"failed_releases_by_client":{"client-1":2,"client-2":1}`) {
		t.Errorf("verdict.json: %s", js)
	}
	out.Reset()
	if err := Table(Check(newHistory().start(0).hold("client-1", 1, 10).end(20).build(), Options{}), &out); err != nil ||
		strings.Contains(out.String(), "collateral") {
		t.Errorf("no damage, yet the table has a collateral section:\n%s", out.String())
	}
}

// After a lock node's crash-restart, a client whose acquire overlapped the restart holds the lock
// alone with a token from the restarted counter, and fencing refuses it (the register saw higher
// tokens before). It is neither stale (nobody took the lock after it) nor certainly rightful (the
// fault may have ended a hold the history cannot see): uncertain, in the registers' lines and in
// the collateral line alike, and not damage. Without the restart the same refusal is collateral
// damage to a rightful holder.
func TestRefusalsUnderUncertaintyAreNeitherStaleNorRightful(t *testing.T) {
	run := func(restart bool) Verdict {
		b := newHistory().start(0).
			acquireToken("client-1", 0, 1, 5).increment("client-1", 1, 2, accepted("fenced-rw", 0), accepted("fenced-write", 0)).
			release("client-1", 10, 11)
		if restart {
			b.crashNode("n1", 14, 16)
		}
		b.acquireToken("client-2", 12, 20, 1).
			read("client-2", 1, 21, 22, rejected("fenced-rw", 1), rejected("fenced-write", 1)).release("client-2", 30, 31).
			final(40, map[string]int64{"fenced-rw": 1, "fenced-write": 1}).end(40)
		return Check(b.build(), Options{})
	}
	v := run(true)
	c := v.Collateral
	for _, reg := range []string{"fenced-rw", "fenced-write"} {
		if r := v.Registers[reg]; r.UncertainRejected != 1 || r.StaleRejected() != 0 || r.LegitRejected != 0 {
			t.Errorf("%s: %+v, want 1 uncertain rejection, none stale or rightful", reg, r)
		}
	}
	if c.UncertainRejections != 2 || c.LegitRejections != 0 || c.FirstUncertain == nil || c.FirstUncertain.Fault != "crash of n1" {
		t.Errorf("collateral %+v (first %+v), want 2 uncertain rejections after a crash of n1", c, c.FirstUncertain)
	}
	if strings.Contains(v.Summary, "stale") || strings.Contains(v.Summary, "rightful") || !strings.Contains(v.Summary, "1 uncertain access") {
		t.Errorf("summary %q: the restart case must be called uncertain, not stale or rightful", v.Summary)
	}
	if s := strings.Join(Sentences(v), " "); !strings.Contains(s, "Fencing also refused 2 accesses of clients that held the lock by every "+
		"record but one") ||
		!strings.Contains(s, "after a crash of n1") ||
		strings.Contains(s, "stale") {
		t.Errorf("sentences:\n%s", s)
	}
	// The restarted counter's lower token is damage of its own (a token anomaly); the refusals are not.
	if h := Headline(v); strings.Contains(h, "refused") || !strings.Contains(h, "1 token anomaly") {
		t.Errorf("headline %q: the uncertain refusals must not be counted as damage", h)
	}
	var table strings.Builder
	_ = Table(v, &table)
	if !strings.Contains(table.String(), "1 (1 uncertain)") {
		t.Errorf("table:\n%s", table.String())
	}

	// expect.registers.R.max_stale_rejections: 0 holds for the restart case, and would not if the
	// uncertain refusals were called stale.
	e := Expect{Registers: map[string]RegisterExpect{"fenced-rw": {MaxStaleRejections: ptr(0)}}}
	if m := e.Match(v); len(m) != 0 {
		t.Errorf("max_stale_rejections 0 on the restart case: %v", m)
	}
	stale := newHistory().start(0).
		acquireToken("client-1", 0, 1, 1).read("client-1", 1, 2, 3, accepted("fenced-rw", 0)).pause("client-1", 4, 60).
		acquireToken("client-2", 5, 20, 2).increment("client-2", 1, 21, accepted("fenced-rw", 0)).release("client-2", 30, 31).
		write("client-1", 1, 61, 62, rejected("fenced-rw", 1)).final(70, map[string]int64{"fenced-rw": 1}).end(70)
	if m := e.Match(Check(stale.build(), Options{})); len(m) != 1 || m[0].Field != "registers.fenced-rw.max_stale_rejections" {
		t.Errorf("max_stale_rejections 0 on a stale holder's refused write: %v", m)
	}

	v = run(false)
	if c := v.Collateral; c.LegitRejections != 2 || c.UncertainRejections != 0 || Judge(v).Outcome != Damaged ||
		!strings.Contains(v.Summary, "rejected 1 rightful access") || !strings.Contains(v.Summary, "collateral damage: 2 rightful accesses refused") {
		t.Errorf("without the restart: %+v, %s; want 2 rightful refusals, damaged, the same count in both lines", c, v.Summary)
	}
}
