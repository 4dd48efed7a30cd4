package nemesis

import (
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// ev is one event of a hand-made history: "client-1 acquire invoke".
func ev(process, f string, typ history.Type) history.Event {
	return history.Event{Process: process, F: f, Type: typ}
}

func feed(s *LockState, events ...history.Event) {
	for _, e := range events {
		s.Observe(e)
	}
}

func TestHolderIsWhoeverHoldsNow(t *testing.T) {
	s := NewLockState()
	if c := s.Candidates(Holder); len(c) != 0 {
		t.Fatalf("holder before anything happened: %v", c)
	}
	feed(s, ev("client-1", history.Acquire, history.Invoke), ev("client-1", history.Acquire, history.OK))
	if c := s.Candidates(Holder); !slices.Equal(c, []string{"client-1"}) {
		t.Fatalf("holder = %v, want client-1", c)
	}
	// Its belief ends when it invokes the release, as the checker counts it.
	feed(s, ev("client-1", history.Release, history.Invoke))
	if c := s.Candidates(Holder); len(c) != 0 {
		t.Fatalf("holder while releasing = %v", c)
	}
	if !s.AtPoint("client-1", Holder) {
		t.Fatal("a client stopped inside its release is not the holder at that point")
	}
	feed(s, ev("client-1", history.Release, history.OK))
	if s.AtPoint("client-1", Holder) {
		t.Fatal("still the holder after its release completed")
	}
}

func TestTwoHoldersLatestFirst(t *testing.T) {
	s := NewLockState()
	feed(s, ev("client-1", history.Acquire, history.Invoke), ev("client-1", history.Acquire, history.OK),
		ev("client-2", history.Acquire, history.Invoke), ev("client-2", history.Acquire, history.OK))
	if c := s.Candidates(Holder); !slices.Equal(c, []string{"client-2", "client-1"}) {
		t.Fatalf("holders = %v, want the latest (client-2) first", c)
	}
	feed(s, history.Event{Process: "client-2", Type: history.Note, F: history.Lost})
	if c := s.Candidates(Holder); !slices.Equal(c, []string{"client-1"}) {
		t.Fatalf("after client-2 lost it: %v", c)
	}
}

func TestWaiterNeedsAnotherHolder(t *testing.T) {
	s := NewLockState()
	feed(s, ev("client-2", history.Acquire, history.Invoke))
	if c := s.Candidates(Waiter); len(c) != 0 {
		t.Fatalf("an attempt on a free lock counted as waiting: %v", c)
	}
	feed(s, ev("client-1", history.Acquire, history.Invoke), ev("client-1", history.Acquire, history.OK),
		ev("client-3", history.Acquire, history.Invoke))
	if c := s.Candidates(Waiter); !slices.Equal(c, []string{"client-2", "client-3"}) {
		t.Fatalf("waiters = %v, want the longest waiting (client-2) first", c)
	}
	feed(s, ev("client-2", history.Acquire, history.Fail))
	if c := s.Candidates(Waiter); !slices.Equal(c, []string{"client-3"}) {
		t.Fatalf("after client-2 gave up: %v", c)
	}
	if !s.AtPoint("client-3", Waiter) || s.AtPoint("client-1", Waiter) {
		t.Fatal("AtPoint(waiter) wrong")
	}
}

func TestOvertakenHoldsAgainAfterAnother(t *testing.T) {
	s := NewLockState()
	hold := func(c string) {
		feed(s, ev(c, history.Acquire, history.Invoke), ev(c, history.Acquire, history.OK))
	}
	release := func(c string) { feed(s, ev(c, history.Release, history.Invoke), ev(c, history.Release, history.OK)) }
	hold("client-1")
	if c := s.Candidates(Overtaken); len(c) != 0 {
		t.Fatalf("a first hold counted as overtaken: %v", c)
	}
	release("client-1")
	hold("client-1") // again, nobody in between: not overtaken
	if c := s.Candidates(Overtaken); len(c) != 0 {
		t.Fatalf("a hold right after its own counted as overtaken: %v", c)
	}
	release("client-1")
	hold("client-2")
	release("client-2")
	if c := s.Candidates(Overtaken); len(c) != 0 {
		t.Fatalf("nobody holds, yet overtaken = %v", c)
	}
	hold("client-1") // client-2 held since client-1's previous hold
	if c := s.Candidates(Overtaken); !slices.Equal(c, []string{"client-1"}) {
		t.Fatalf("overtaken = %v, want client-1", c)
	}
	if !s.AtPoint("client-1", Overtaken) || s.AtPoint("client-2", Overtaken) {
		t.Fatal("AtPoint(overtaken) wrong")
	}
}

func TestKilledOrCrashedClientHoldsNothing(t *testing.T) {
	s := NewLockState()
	feed(s, ev("client-1", history.Acquire, history.Invoke), ev("client-1", history.Acquire, history.OK),
		ev("client-2", history.Acquire, history.Invoke))
	feed(s, history.Event{Process: history.Nemesis, Type: history.Invoke, F: history.Kill, Target: "client-1"})
	if c := s.Candidates(Holder); len(c) != 0 {
		t.Fatalf("a killed client still holds: %v", c)
	}
	feed(s, history.Event{Process: history.Controller, Type: history.Note, F: history.Crash, Target: "client-2"})
	if s.AtPoint("client-2", Waiter) {
		t.Fatal("a crashed client still waits")
	}
}

func TestChangedIsClosedOnEachChange(t *testing.T) {
	s := NewLockState()
	ch := s.Changed()
	feed(s, ev("client-1", history.Read, history.Invoke)) // not about the lock
	select {
	case <-ch:
		t.Fatal("closed by an event that changes nothing")
	default:
	}
	feed(s, ev("client-1", history.Acquire, history.Invoke))
	select {
	case <-ch:
	default:
		t.Fatal("not closed by an acquire")
	}
}

// Events of different clients arrive by different pipes: a release that happened before the next
// acquire may arrive after it. Two holders by arrival, then, are not yet an overlap; the events'
// times decide.
func TestOverlappingGoesByTheEventsTimes(t *testing.T) {
	at := func(e history.Event, t int64) history.Event { e.Time = t; return e }
	s := NewLockState()
	feed(s, at(ev("client-1", history.Acquire, history.OK), 10),
		at(ev("client-2", history.Acquire, history.OK), 30),     // arrives first...
		at(ev("client-1", history.Release, history.Invoke), 20)) // ...though client-1 let go at 20
	if s.Overlapping() {
		t.Fatal("a handover seen out of order counted as an overlap")
	}
	feed(s, at(ev("client-1", history.Acquire, history.OK), 40)) // client-2 still holds
	if !s.Overlapping() {
		t.Fatal("two holds from 40 on not seen overlapping")
	}
	s = NewLockState()
	feed(s, at(ev("client-1", history.Acquire, history.OK), 10), at(ev("client-2", history.Acquire, history.OK), 15),
		at(ev("client-1", history.Release, history.Invoke), 20), at(ev("client-2", history.Release, history.Invoke), 25))
	if !s.Overlapping() {
		t.Fatal("holds 10–20 and 15–25 not seen overlapping after both ended")
	}
}
