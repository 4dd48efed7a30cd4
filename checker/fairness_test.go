package checker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/yamltime"
	"go.yaml.in/yaml/v3"
)

func TestFairnessCountsOvertakesExactly(t *testing.T) {
	type client struct {
		name                          string
		acquisitions, overtaken, took int
	}
	tests := []struct {
		name                                      string
		history                                   *builder
		overtakes, overtaking, most, acquisitions int
		clients                                   []client
	}{
		{
			name: "first come, first served: waiters are served in the order they asked",
			history: newHistory().start(0).
				acquire("client-1", 0, 1).release("client-1", 100, 101).
				acquire("client-2", 10, 101).release("client-2", 200, 201).
				acquire("client-3", 20, 201).release("client-3", 300, 301).
				acquire("client-1", 110, 301).release("client-1", 400, 401).end(500),
			acquisitions: 4,
			clients:      []client{{"client-1", 2, 0, 0}, {"client-2", 1, 0, 0}, {"client-3", 1, 0, 0}},
		},
		{
			name: "the newest waiter first: it overtakes both, the middle one overtakes the oldest",
			history: newHistory().start(0).
				acquire("client-1", 0, 1).release("client-1", 100, 101).
				acquire("client-2", 10, 301).
				acquire("client-3", 20, 201).release("client-3", 300, 301).
				acquire("client-4", 30, 101).release("client-4", 200, 201).end(500),
			overtakes: 3, overtaking: 2, most: 2, acquisitions: 4,
			clients: []client{{"client-1", 1, 0, 0}, {"client-2", 1, 2, 0}, {"client-3", 1, 1, 1}, {"client-4", 1, 0, 2}},
		},
		{
			name: "a waiter that gave up before the acquisition is not overtaken",
			history: newHistory().start(0).
				acquire("client-1", 0, 1).release("client-1", 100, 101).
				op("client-2", history.Acquire, 10, 50, history.Fail, nil).
				acquire("client-3", 20, 101).end(500),
			acquisitions: 2,
			clients:      []client{{"client-1", 1, 0, 0}, {"client-2", 0, 0, 0}, {"client-3", 1, 0, 0}},
		},
		{
			name: "a waiter that gives up at the very moment of the acquisition is no longer waiting",
			history: newHistory().start(0).
				acquire("client-1", 0, 1).release("client-1", 100, 101).
				op("client-2", history.Acquire, 10, 101, history.Fail, nil).
				acquire("client-3", 20, 101).end(500),
			acquisitions: 2,
			clients:      []client{{"client-1", 1, 0, 0}, {"client-2", 0, 0, 0}, {"client-3", 1, 0, 0}},
		},
		{
			name: "a waiter whose attempt ends with an unknown outcome after the acquisition was overtaken",
			history: newHistory().start(0).
				acquire("client-1", 0, 1).release("client-1", 100, 101).
				op("client-2", history.Acquire, 10, 150, history.Info, nil).
				acquire("client-3", 20, 101).end(500),
			overtakes: 1, overtaking: 1, most: 1, acquisitions: 2,
			clients: []client{{"client-1", 1, 0, 0}, {"client-2", 0, 1, 0}, {"client-3", 1, 0, 1}},
		},
		{
			name: "a dead waiter is not overtaken, a paused one is",
			history: newHistory().start(0).
				acquire("client-1", 0, 1).release("client-1", 100, 101).
				op("client-2", history.Acquire, 10, -1, "", nil).kill("client-2", 50).
				op("client-3", history.Acquire, 12, -1, "", nil).pause("client-3", 40, 400).
				acquire("client-4", 20, 101).end(500),
			overtakes: 1, overtaking: 1, most: 1, acquisitions: 2,
			clients: []client{{"client-1", 1, 0, 0}, {"client-2", 0, 0, 0}, {"client-3", 0, 1, 0}, {"client-4", 1, 0, 1}},
		},
		{
			name: "re-entries of a reentrant lock are not acquisitions",
			history: newHistory().start(0).
				acquire("client-1", 0, 1).op("client-1", history.Reacquire, 20, 21, history.OK, nil).
				op("client-1", history.Rerelease, 50, 51, history.OK, nil).release("client-1", 100, 101).
				acquire("client-2", 10, 101).end(500),
			acquisitions: 2,
			clients:      []client{{"client-1", 1, 0, 0}, {"client-2", 1, 0, 0}},
		},
		{
			name: "readers sharing the lock overtake a writer that asked first",
			history: newHistory().start(0).
				acquire("client-1", 0, 1).
				acquire("client-3", 5, 300).
				acquire("client-2", 10, 11).release("client-1", 100, 101).release("client-2", 290, 291).end(500),
			overtakes: 1, overtaking: 1, most: 1, acquisitions: 3,
			clients: []client{{"client-1", 1, 0, 0}, {"client-2", 1, 0, 1}, {"client-3", 1, 1, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Check(tt.history.build(), Options{}).Fairness
			if f.Overtakes != tt.overtakes || f.Overtaking != tt.overtaking || f.MostOvertaken != tt.most || f.Acquisitions != tt.acquisitions {
				t.Fatalf("overtakes %d, overtaking %d, most %d, acquisitions %d; want %d, %d, %d, %d",
					f.Overtakes, f.Overtaking, f.MostOvertaken, f.Acquisitions, tt.overtakes, tt.overtaking, tt.most, tt.acquisitions)
			}
			if f.Fair() != (tt.overtakes == 0) {
				t.Errorf("Fair() = %v with %d overtakes", f.Fair(), f.Overtakes)
			}
			var got []client
			for _, c := range f.Clients {
				got = append(got, client{c.Client, c.Acquisitions, c.Overtaken, c.Overtook})
			}
			if len(got) != len(tt.clients) {
				t.Fatalf("clients %+v, want %+v", got, tt.clients)
			}
			for i := range got {
				if got[i] != tt.clients[i] {
					t.Errorf("client %+v, want %+v", got[i], tt.clients[i])
				}
			}
		})
	}
}

func TestWorstWaitSpansAttemptsThatGaveUp(t *testing.T) {
	tests := []struct {
		name            string
		history         *builder
		worst, offset   float64 // ms
		client          string
		ended           bool
		perClientWorst2 float64 // client-2's worst wait, ms
	}{
		{
			name: "three failed attempts and a success are one wait",
			history: newHistory().start(0).acquire("client-1", 0, 1).release("client-1", 700, 701).
				acquireFails("client-2", 100, 400, 100).acquire("client-2", 410, 701).end(1000),
			worst: 601, offset: 100, client: "client-2", ended: true, perClientWorst2: 601,
		},
		{
			name: "a waiter never served waits until the run's end",
			history: newHistory().start(0).acquire("client-1", 0, 1).
				acquireFails("client-2", 100, 900, 100).end(1000),
			worst: 900, offset: 100, client: "client-2", ended: false, perClientWorst2: 900,
		},
		{
			name: "a waiter that dies waits until its death",
			history: newHistory().start(0).acquire("client-1", 0, 1).
				acquireFails("client-2", 100, 300, 100).kill("client-2", 300).end(1000),
			worst: 200, offset: 100, client: "client-2", ended: false, perClientWorst2: 200,
		},
		{
			name: "waits end at each acquisition: the longest single one counts",
			history: newHistory().start(0).
				acquire("client-2", 0, 50).release("client-2", 60, 61).
				acquire("client-2", 100, 130).release("client-2", 140, 141).
				acquire("client-1", 200, 210).end(1000),
			worst: 50, offset: 0, client: "client-2", ended: true, perClientWorst2: 50,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Check(tt.history.build(), Options{}).Fairness
			if f.WorstWait != time.Duration(ms(tt.worst)) || f.WorstWaitOffset != time.Duration(ms(tt.offset)) ||
				f.WorstWaitClient != tt.client || f.WorstWaitEnded != tt.ended {
				t.Fatalf("worst wait %v at %v by %q (ended %v), want %vms at %vms by %q (ended %v)",
					f.WorstWait, f.WorstWaitOffset, f.WorstWaitClient, f.WorstWaitEnded, tt.worst, tt.offset, tt.client, tt.ended)
			}
			for _, c := range f.Clients {
				if c.Client == "client-2" && c.WorstWait != time.Duration(ms(tt.perClientWorst2)) {
					t.Errorf("client-2's worst wait %v, want %vms", c.WorstWait, tt.perClientWorst2)
				}
			}
		})
	}
}

func TestFairnessInWordsTableAndJSON(t *testing.T) {
	unfair := newHistory().start(0).
		acquire("client-1", 0, 1).release("client-1", 100, 101).
		acquire("client-2", 10, 301).
		acquire("client-3", 20, 101).release("client-3", 300, 301).end(500).build()
	v := Check(unfair, Options{})
	sentences := strings.Join(Sentences(v), "\n")
	for _, want := range []string{"Fairness: 1 of 3 acquisitions (333 per 1,000) overtook a client that had been waiting longer, 1 overtake in all",
		"the longest wait was client-2's, 291ms from 0.01 s"} {
		if !strings.Contains(sentences, want) {
			t.Errorf("sentences lack %q:\n%s", want, sentences)
		}
	}
	if !strings.Contains(v.Summary, "1 overtake, worst wait 291ms") {
		t.Errorf("summary lacks the fairness words: %s", v.Summary)
	}
	var table strings.Builder
	if err := Table(v, &table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "fairness") || !strings.Contains(table.String(), "1 of 3") {
		t.Errorf("table lacks the fairness row:\n%s", table.String())
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Fairness struct {
			Overtakes int `json:"overtakes"`
			WorstWait int64
		} `json:"fairness"`
	}
	if err := json.Unmarshal(b, &back); err != nil || back.Fairness.Overtakes != 1 {
		t.Errorf("verdict.json fairness = %+v (%v), want 1 overtake", back.Fairness, err)
	}

	fair := newHistory().start(0).
		acquire("client-1", 0, 1).release("client-1", 100, 101).
		acquire("client-2", 10, 101).end(500).build()
	v = Check(fair, Options{})
	if s := strings.Join(Sentences(v), "\n"); !strings.Contains(s, "no acquisition overtook a client that had been waiting longer (first come, "+
		"first served)") {
		t.Errorf("fair sentences:\n%s", s)
	}
	if !strings.Contains(v.Summary, "first come, first served") {
		t.Errorf("fair summary: %s", v.Summary)
	}
}

func TestFairnessExpectations(t *testing.T) {
	src := `
fairness: {max_overtakes: 0}
liveness: {min_unavailable: 1s, max_unavailable: 3s}
`
	var e Expect
	if err := yaml.Unmarshal([]byte(src), &e); err != nil {
		t.Fatal(err)
	}
	if e.Fairness == nil || e.Fairness.MaxOvertakes == nil || *e.Fairness.MaxOvertakes != 0 ||
		e.Liveness == nil || e.Liveness.MinUnavailable == nil || e.Liveness.MinUnavailable.D() != time.Second {
		t.Fatalf("decoded %+v / %+v", e.Fairness, e.Liveness)
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	unfair := Verdict{Fairness: Fairness{Acquisitions: 10, Overtakes: 3, Overtaking: 2},
		Liveness: Liveness{LongestUnavailable: 1500 * time.Millisecond}}
	if m := e.Match(unfair); len(m) != 1 || m[0].Field != "fairness.max_overtakes" || !strings.Contains(m[0].Got, "3 (2 of 10") {
		t.Errorf("mismatches %v, want only fairness.max_overtakes", m)
	}
	fair := Verdict{Fairness: Fairness{Acquisitions: 10}, Liveness: Liveness{LongestUnavailable: 1500 * time.Millisecond}}
	if m := e.Match(fair); len(m) != 0 {
		t.Errorf("a fair run with 1.5s unavailable: mismatches %v", m)
	}
	fair.Liveness.LongestUnavailable = 200 * time.Millisecond
	if m := e.Match(fair); len(m) != 1 || m[0].Field != "liveness.min_unavailable" {
		t.Errorf("200ms unavailable: mismatches %v, want liveness.min_unavailable", m)
	}
	fair.Liveness.LongestUnavailable = 4 * time.Second
	if m := e.Match(fair); len(m) != 1 || m[0].Field != "liveness.max_unavailable" {
		t.Errorf("4s unavailable: mismatches %v, want liveness.max_unavailable", m)
	}
	if m := e.Match(Verdict{Liveness: Liveness{LongestUnavailable: 1500 * time.Millisecond}}); len(m) != 1 || m[0].Got != "no acquisition to judge" {
		t.Errorf("no acquisition: mismatches %v, want max_overtakes unmet", m)
	}
	min1 := Expect{Fairness: &FairnessExpect{MinOvertakes: ptr(1)}}
	if m := min1.Match(Verdict{Fairness: Fairness{Acquisitions: 10}}); len(m) != 1 || m[0].Field != "fairness.min_overtakes" {
		t.Errorf("min_overtakes 1 on a fair run: mismatches %v", m)
	}

	bad := []struct {
		e    Expect
		want string
	}{
		{Expect{Fairness: &FairnessExpect{MaxOvertakes: ptr(-1)}}, "expect.fairness.max_overtakes: -1 is negative"},
		{Expect{Fairness: &FairnessExpect{MaxOvertakes: ptr(1), MinOvertakes: ptr(2)}}, "expect.fairness.min_overtakes: 2 is above max_overtakes 1"},
		{Expect{Liveness: &LivenessExpect{UnavailableExpect: UnavailableExpect{
			MinUnavailable: ptr(yamltime.Duration(2 * time.Second)), MaxUnavailable: ptr(yamltime.Duration(time.Second))}}},
			"expect.liveness.min_unavailable: 2s is above max_unavailable 1s"},
	}
	for _, b := range bad {
		if err := b.e.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Validate() = %v, want %q", err, b.want)
		}
	}
}

func TestOverlapEpisodesMergeTheWindowsOfOneRace(t *testing.T) {
	// A three-way race at 100 (three pair windows at once), then a two-way one at 300.
	h := newHistory().start(0).
		acquire("client-1", 90, 100).acquire("client-2", 91, 100.1).acquire("client-3", 92, 100.2).
		release("client-1", 120, 121).release("client-2", 122, 123).release("client-3", 124, 125).
		acquire("client-1", 290, 300).acquire("client-2", 291, 301).
		release("client-1", 320, 321).release("client-2", 322, 323).
		acquire("client-3", 400, 401).end(500)
	v := Check(h.build(), Options{})
	if n := len(v.MutualExclusion.Windows); n != 4 {
		t.Fatalf("%d pair windows, want 4", n)
	}
	if n := overlapEpisodes(v.MutualExclusion); n != 2 {
		t.Fatalf("%d episodes, want 2", n)
	}
	if s := strings.Join(Sentences(v), "\n"); !strings.Contains(
		s,
		"Double ownership began 2 times in 6 acquisitions: 333.3 per 1,000 acquisitions.",
	) {
		t.Errorf("sentences lack the rate:\n%s", s)
	}
}

// A design that promises first come, first served is held to it: acquisitions by clients that
// asked after a waiter still in line break the promise (damaged) when there are at least two
// (and one per 1,000 acquisitions), unless the history cannot tell the waiter was in line first:
// its attempt may still have been connecting (its first), a fault touched it or a server while it
// waited, or both are read holds. One alone may be a request that reached the lock late. The same
// history from a design that promises nothing is safe.
func TestUnfairOvertakesOfAFairDesign(t *testing.T) {
	// client-1 and client-2 each hold once first (so the attempts judged are not their first),
	// then client-1 asks at 300 and client-2 at 310; client-2 gets the lock first.
	warm := func() *builder {
		return newHistory().start(0).hold("client-1", 10, 100).hold("client-2", 110, 200)
	}
	overtakeAt := func(b *builder, t0 float64) *builder {
		return b.acquire("client-1", t0, t0+200).release("client-1", t0+250, t0+251).
			acquire("client-2", t0+10, t0+100).release("client-2", t0+150, t0+151)
	}
	once := overtakeAt(warm(), 300).end(1000)
	twice := overtakeAt(overtakeAt(warm(), 300), 700).end(1000)
	inOrder := warm().acquire("client-1", 300, 400).release("client-1", 450, 451).
		acquire("client-2", 310, 451).release("client-2", 500, 501).end(1000)

	v := Check(twice.build(), Options{FirstComeFirstServed: true})
	f := v.Fairness
	if f.Unfair != 2 || !f.BrokenPromise() || f.FirstUnfair == nil || f.FirstUnfair.Client != "client-1" || f.FirstUnfair.By != "client-2" {
		t.Fatalf("overtaken twice: %+v (first %+v), want 2 unfair overtakes, the first of client-1 by client-2", f, f.FirstUnfair)
	}
	if j := Judge(v); j.Outcome != Damaged {
		t.Errorf("a fair design that overtook twice: %s, want damaged", j.Outcome)
	}
	if h := Headline(v); !strings.Contains(h, "2 unfair overtakes (the design promises first come, first served)") {
		t.Errorf("headline %q lacks the unfair overtakes", h)
	}
	if s := strings.Join(Sentences(v), " "); !strings.Contains(
		s,
		"and broke it 2 times: the first, client-2 (asked at 0.31 s) got the lock at 0.40 s before client-1, which had asked at 0.30 s",
	) {
		t.Errorf("sentences do not say who overtook whom: %s", s)
	}
	if !strings.Contains(v.Summary, "2 overtakes (2 unfair)") {
		t.Errorf("summary %q lacks the unfair count", v.Summary)
	}
	if v := Check(twice.build(), Options{}); Judge(v).Outcome != Safe || v.Fairness.BrokenPromise() {
		t.Errorf("the same history from a design that promises nothing: %s", Judge(v).Outcome)
	}
	v = Check(once.build(), Options{FirstComeFirstServed: true})
	if v.Fairness.Unfair != 1 || v.Fairness.BrokenPromise() || Judge(v).Outcome != Safe {
		t.Errorf(
			"overtaken once: %d unfair, broken %v, %s; want 1, not broken, safe",
			v.Fairness.Unfair,
			v.Fairness.BrokenPromise(),
			Judge(v).Outcome,
		)
	}
	if s := strings.Join(Sentences(v), " "); !strings.Contains(
		s,
		"and kept it (1 unfair overtake, which the history alone cannot tell from a request that reached the lock late)",
	) {
		t.Errorf("one unfair overtake: %s", s)
	}
	if v := Check(inOrder.build(), Options{FirstComeFirstServed: true}); v.Fairness.Unfair != 0 || Judge(v).Outcome != Safe {
		t.Errorf("served in order: %d unfair, %s; want 0, safe", v.Fairness.Unfair, Judge(v).Outcome)
	}
	for _, c := range []struct {
		unfair, acquisitions int
		broken               bool
	}{{1, 10, false}, {2, 10, true}, {2, 2000, true}, {2, 2001, false}, {3, 3000, true}} {
		if got := PromiseBroken(c.unfair, c.acquisitions); got != c.broken {
			t.Errorf("PromiseBroken(%d, %d) = %v", c.unfair, c.acquisitions, got)
		}
	}

	excused := map[string]*builder{
		// client-1's first attempt may still be opening its connection.
		"first attempt": overtakeAt(newHistory().start(0), 300).end(1000),
		"the waiter was paused": warm().acquire("client-1", 300, 500).release("client-1", 550, 551).pause("client-1", 320, 380).
			acquire("client-2", 310, 400).release("client-2", 450, 451).end(1000),
		"a lock node restarted": warm().acquire("client-1", 300, 500).release("client-1", 550, 551).crashNode("n1", 305, 306).
			acquire("client-2", 310, 400).release("client-2", 450, 451).end(1000),
		"the first attempt after an unknown one": warm().op("client-1", history.Acquire, 250, 290, history.Info, nil).
			acquire("client-1", 300, 500).release("client-1", 550, 551).
			acquire("client-2", 310, 400).release("client-2", 450, 451).end(1000),
	}
	for name, b := range excused {
		v := Check(b.build(), Options{FirstComeFirstServed: true})
		if v.Fairness.Overtakes != 1 || v.Fairness.Unfair != 0 || Judge(v).Outcome != Safe {
			t.Errorf("%s: %d overtakes, %d unfair, %s; want 1, 0, safe", name, v.Fairness.Overtakes, v.Fairness.Unfair, Judge(v).Outcome)
		}
	}
	// Two readers of a read/write lock may hold together: a later reader first is no overtake of
	// the promise; a writer first is.
	readers := warm().op("client-1", history.Acquire, 300, 420, history.OK, func(e *history.Event) { e.Role = history.Read }).
		op("client-2", history.Acquire, 310, 400, history.OK, func(e *history.Event) { e.Role = history.Read }).
		release("client-1", 450, 451).release("client-2", 460, 461).end(1000)
	if v := Check(readers.build(), Options{FirstComeFirstServed: true}); v.Fairness.Unfair != 0 {
		t.Errorf("a reader before a reader that asked first: %d unfair, want 0", v.Fairness.Unfair)
	}
}

// An acquire op retries until its acquire timeout, and a queued lock's waiter whose attempt gives
// up leaves the line and joins it again at the back with the next one (the history records the
// op, not its attempts). An overtake counts as unfair only while the overtaken op's first attempt
// surely keeps its place (Options.KeepsPlace); a client that gave up and asks again is a new
// arrival, whose place is its new op's invoke.
func TestUnfairOvertakesOnlyWhileTheFirstAttemptKeepsItsPlace(t *testing.T) {
	const keeps = 500 * time.Millisecond
	// client-1 and client-2 each hold once first, so the attempts judged are not their first.
	warm := func() *builder {
		return newHistory().start(0).hold("client-1", 10, 100).hold("client-2", 110, 200)
	}
	tests := []struct {
		name              string
		history           *builder
		overtakes, unfair int
	}{
		{
			name: "overtaken 90 ms after it asked: unfair",
			history: warm().acquire("client-1", 300, 500).release("client-1", 550, 551).
				acquire("client-2", 310, 390).release("client-2", 450, 451).end(1000),
			overtakes: 1, unfair: 1,
		},
		{
			name: "overtaken 1 ms before its first attempt may give up: unfair",
			history: warm().acquire("client-1", 300, 900).release("client-1", 950, 951).
				acquire("client-2", 310, 799).release("client-2", 850, 851).end(1000),
			overtakes: 1, unfair: 1,
		},
		{
			name: "overtaken when its first attempt may have given up: excused",
			history: warm().acquire("client-1", 300, 900).release("client-1", 950, 951).
				acquire("client-2", 310, 800).release("client-2", 850, 851).end(1000),
			overtakes: 1,
		},
		{
			name: "overtaken twice by one that asked after its first attempt: excused",
			history: warm().acquire("client-1", 300, 1500).release("client-1", 1550, 1551).
				acquire("client-2", 900, 1000).release("client-2", 1050, 1051).
				acquire("client-2", 1100, 1200).release("client-2", 1250, 1251).end(2000),
			overtakes: 2,
		},
		{
			name: "gave up and asked again after the other: served after it, no overtake",
			history: warm().op("client-1", history.Acquire, 300, 800, history.Fail, nil).
				acquire("client-2", 500, 900).release("client-2", 950, 951).
				acquire("client-1", 810, 960).release("client-1", 1000, 1001).end(2000),
		},
		{
			name: "gave up and asked again before the other: overtaken, unfair",
			history: warm().op("client-1", history.Acquire, 300, 800, history.Fail, nil).
				acquire("client-1", 810, 960).release("client-1", 1000, 1001).
				acquire("client-2", 820, 900).release("client-2", 950, 951).end(2000),
			overtakes: 1, unfair: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Check(tt.history.build(), Options{FirstComeFirstServed: true, KeepsPlace: keeps}).Fairness
			if f.Overtakes != tt.overtakes || f.Unfair != tt.unfair {
				t.Errorf("%d overtakes, %d unfair; want %d, %d", f.Overtakes, f.Unfair, tt.overtakes, tt.unfair)
			}
		})
	}
	// Unknown attempts (KeepsPlace 0): an op keeps its place until it ends.
	late := tests[3].history.build()
	if f := Check(late, Options{FirstComeFirstServed: true}).Fairness; f.Unfair != 2 || !f.BrokenPromise() {
		t.Errorf("without KeepsPlace: %d unfair, broken %v; want 2, broken", f.Unfair, f.BrokenPromise())
	}
	v := Check(late, Options{FirstComeFirstServed: true, KeepsPlace: keeps})
	if j := Judge(v); j.Outcome != Safe {
		t.Errorf("overtaken only after its first attempt: %s, want safe", j.Outcome)
	}
	if s := strings.Join(Sentences(v), " "); !strings.Contains(s, "and kept it (2 overtakes of attempts that may still have been "+
		"connecting, that a fault touched, that may have joined the line again, or of a read hold by another)") {
		t.Errorf("the excused overtakes are not said: %s", s)
	}
}

// A lock that keeps a waiter's place on its session (an etcd lease, a ZooKeeper session) keeps it
// only while the session lives. An overtake of a waiter whose session's renewals had run out is
// not held against the lock, nor is a failed release of a holder whose session ran out in its
// hold; with its renewals in force, both are. Renewals that name no session (a watchdog that
// renews only a hold) say nothing of a waiter's place.
func TestAWaiterWhoseSessionLapsedMayBeOvertaken(t *testing.T) {
	// client-1's session is renewed every 300 ms from 0 to last (each renewal promising 1 s);
	// client-2's to 1.5 s. Both hold once first; then client-1 asks at 1.4 s, client-2 at 1.41 s
	// and gets the lock first; client-1 holds from 1.6 s and its release fails at 1.7 s.
	run := func(last float64, session string) *builder {
		b := newHistory().designs(leaseRule, "client-1", "client-2").start(0)
		for at := 0.0; at <= last; at += 300 {
			b.promised("client-1", history.Renew, at, at+1, 1000, -1, session)
		}
		for at := 0.0; at <= 1500; at += 300 {
			b.promised("client-2", history.Renew, at, at+1, 1000, -1, "s2")
		}
		return b.hold("client-1", 10, 100).hold("client-2", 110, 200).
			acquire("client-1", 1400, 1600).acquire("client-2", 1410, 1500).release("client-2", 1550, 1551).
			op("client-1", history.Release, 1700, 1701, history.Fail, nil).end(3000)
	}
	for _, c := range []struct {
		name           string
		last           float64
		session        string
		unfair, failed int
	}{
		{"the overtaken's session renewed throughout", 1500, "s1", 1, 1},
		{"its session's renewals ended at 0.3 s (promised to 1.3 s)", 300, "s1", 0, 0},
		{"renewals of no session ended at 0.3 s", 300, "", 1, 1},
	} {
		v := Check(run(c.last, c.session).build(), Options{FirstComeFirstServed: true})
		if v.Fairness.Overtakes != 1 || v.Fairness.Unfair != c.unfair || v.Collateral.FailedReleases != c.failed {
			t.Errorf("%s: %d overtakes, %d unfair, %d failed releases; want 1, %d, %d", c.name, v.Fairness.Overtakes,
				v.Fairness.Unfair, v.Collateral.FailedReleases, c.unfair, c.failed)
		}
	}
}
