package workloads

// The usage steps a worker takes, on a scripted lock: pure logic of the worker's own (which pass
// an abandon lands on, how deep a holder nests, how often a release is sent, how many attempts a
// try makes). The real designs take the same steps in the track record and the runner's tests.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/clock"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
)

// scriptedLock passes the point "answered" answers times in each Acquire, looking at its context
// after each pass as a library acts on the answer it just got; it records what it saw.
type scriptedLock struct {
	point     func(string)
	answers   int
	busy      bool    // every Acquire answers busy
	releases  []error // what successive Releases answer (then nil)
	acquires  int
	endedAt   []int // per Acquire: the pass after which its context had ended (0: never)
	heldDepth int
}

func (l *scriptedLock) Acquire(ctx context.Context) (*int64, error) {
	l.acquires++
	if l.busy {
		return nil, locks.ErrBusy
	}
	for pass := 1; pass <= l.answers; pass++ {
		l.point("answered")
		if ctx.Err() != nil {
			l.endedAt = append(l.endedAt, pass)
			return nil, ctx.Err()
		}
	}
	l.endedAt = append(l.endedAt, 0)
	l.heldDepth++
	return nil, nil
}

func (l *scriptedLock) Release(context.Context) error {
	if len(l.releases) > 0 {
		err := l.releases[0]
		l.releases = l.releases[1:]
		return err
	}
	l.heldDepth--
	return nil
}

func (l *scriptedLock) Close() error { return nil }

// testWorker is a worker around lock, writing its events into out.
func testWorker(lock *scriptedLock, wl Workload, out *bytes.Buffer) *worker {
	if wl.AcquireTimeout == 0 {
		wl.AcquireTimeout = yamltime.Duration(time.Second)
	}
	wl.Timeout = yamltime.Duration(100 * time.Millisecond)
	w := &worker{cfg: Config{Client: "client-1", Workload: wl}, out: out, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		rng: rand.New(rand.NewPCG(1, 2)), passes: map[string]int{}, armed: map[string]bool{}, clock: clock.NewSkewed(0, 1)}
	lock.point = w.point
	w.lock = lock
	return w
}

// events reads what a worker wrote.
func events(t *testing.T, out *bytes.Buffer) []history.Event {
	t.Helper()
	var es []history.Event
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	for dec.More() {
		var e history.Event
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

func count(es []history.Event, typ history.Type, f string) int {
	n := 0
	for _, e := range es {
		if e.Type == typ && e.F == f {
			n++
		}
	}
	return n
}

func TestAbandonAtAPointEndsTheAttemptBeforeTheLockReadsThatAnswer(t *testing.T) {
	var out bytes.Buffer
	lock := &scriptedLock{answers: 3}
	w := testWorker(lock, Workload{}, &out)
	w.point("answered") // outside an attempt: not counted
	w.step(Command{Cmd: "step", Step: locks.UsageAbandon, Point: "answered", Occurrence: 2})
	if _, held := w.acquire(context.Background()); !held {
		t.Fatal("the retry after the abandoned attempt should hold")
	}
	if len(lock.endedAt) != 2 || lock.endedAt[0] != 2 || lock.endedAt[1] != 0 {
		t.Fatalf("attempts saw their context end after passes %v, want [2 0]: the second answer of the first attempt, "+
			"then an attempt left alone", lock.endedAt)
	}
	es := events(t, &out)
	var notes []history.Event
	for _, e := range es {
		if e.Type == history.Note && e.F == history.Abandoned {
			notes = append(notes, e)
		}
	}
	// The worker's third pass of the point overall (one outside the attempt, then two in it).
	if len(notes) != 1 || notes[0].Point != "answered" || notes[0].Pass != 3 || notes[0].Error != "" {
		t.Fatalf("abandoned notes %+v, want one at pass 3 of answered", notes)
	}
	if count(es, history.OK, history.Acquire) != 1 {
		t.Fatalf("want one acquire op that ends ok: %s", out.String())
	}
}

func TestAbandonNowWithNoAttemptInFlightSaysSo(t *testing.T) {
	var out bytes.Buffer
	w := testWorker(&scriptedLock{}, Workload{}, &out)
	w.step(Command{Cmd: "step", Step: locks.UsageAbandon})
	es := events(t, &out)
	if len(es) != 1 || es[0].F != history.Abandoned || es[0].Error == "" {
		t.Fatalf("want one abandoned note saying no attempt was in flight, got %s", out.String())
	}
}

func TestReenterNestsToTheDepthAndGivesEveryLevelBack(t *testing.T) {
	for depth := 1; depth <= 3; depth++ {
		var out bytes.Buffer
		lock := &scriptedLock{}
		w := testWorker(lock, Workload{Usage: Usage{Reenter: depth}}, &out)
		w.reenter()
		es := events(t, &out)
		if got := count(es, history.OK, history.Reacquire); got != depth {
			t.Errorf("depth %d: %d reacquires", depth, got)
		}
		if got := count(es, history.OK, history.Rerelease); got != depth {
			t.Errorf("depth %d: %d rereleases", depth, got)
		}
		if lock.heldDepth != 0 {
			t.Errorf("depth %d: %d levels left held", depth, lock.heldDepth)
		}
	}
	var out bytes.Buffer
	testWorker(&scriptedLock{}, Workload{Reentrant: true}, &out).reenter()
	if got := count(events(t, &out), history.OK, history.Reacquire); got != 1 {
		t.Errorf("reentrant: true nests once, got %d", got)
	}
}

func TestReleaseRetrySendsAnUnknownReleaseAgain(t *testing.T) {
	unknown := errors.New("i/o timeout")
	for _, c := range []struct {
		retries, want int
		answers       []error
	}{
		{0, 1, []error{unknown}},                   // no retry: one release
		{2, 3, []error{unknown, unknown}},          // the third is answered
		{2, 3, []error{unknown, unknown, unknown}}, // gives up after the retries
		{3, 2, []error{unknown, fmtNotHeld()}},     // not held: certain, no more
		{3, 1, nil},                                // answered at once
	} {
		var out bytes.Buffer
		w := testWorker(&scriptedLock{releases: c.answers}, Workload{Usage: Usage{ReleaseRetry: c.retries}}, &out)
		w.release()
		if got := count(events(t, &out), history.Invoke, history.Release); got != c.want {
			t.Errorf("release-retry %d, answers %v: %d releases sent, want %d", c.retries, c.answers, got, c.want)
		}
	}
}

func fmtNotHeld() error { return locks.ErrNotHeld }

func TestTryMakesOneAttemptAndGivesUp(t *testing.T) {
	var out bytes.Buffer
	zero := yamltime.Duration(0)
	lock := &scriptedLock{busy: true}
	w := testWorker(lock, Workload{Usage: Usage{Try: &zero}, AcquireTimeout: yamltime.Duration(10 * time.Second),
		BackoffMin: yamltime.Duration(time.Millisecond), BackoffMax: yamltime.Duration(2 * time.Millisecond)}, &out)
	if _, held := w.acquire(context.Background()); held {
		t.Fatal("a busy lock cannot be held")
	}
	if lock.acquires != 1 {
		t.Fatalf("a try made %d attempts, want 1", lock.acquires)
	}
	if got := count(events(t, &out), history.Fail, history.Acquire); got != 1 {
		t.Fatalf("want the acquire op to fail once: %s", out.String())
	}
}
