package nemesis

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// A kind's fields are read from its own parameter type: `lockcheck faults` and the loader's
// errors list them from there.
func TestAKindsFieldsComeFromItsParameterType(t *testing.T) {
	for _, c := range []struct {
		kind *Kind
		want []string
	}{
		{pauseKind, []string{"for"}},
		{killKind, nil},
		{clockKind, []string{"for", "offset", "rate"}},
		{partitionKind, []string{"for", "nodes", "mode"}},
		{delayKind, []string{"for", "nodes", "latency", "jitter", "until"}},
		{strobeKind, []string{"for", "offset", "period"}},
	} {
		if !reflect.DeepEqual(c.kind.Takes, c.want) {
			t.Errorf("%s takes %v, want %v", c.kind.Name, c.kind.Takes, c.want)
		}
	}
}

// The history keeps a kind's parameters as its JSON object, and the kind reads them back for
// its label: as this build writes them, and as histories written before params existed kept them
// (the decoder gathers those keys into params; a delay's latency was once its offset).
func TestLabelsReadTheParametersTheHistoryKept(t *testing.T) {
	written := recorded(ClockParams{Offset: signed(2 * time.Second), Rate: 1.5})
	if string(written) != `{"offset":2000000000,"rate":1.5}` {
		t.Fatalf("clock parameters recorded as %s", written)
	}
	for _, c := range []struct {
		f    history.Fault
		want string
	}{
		{history.Fault{Kind: history.Clock, Target: "n1", Params: written}, "clock n1 +2s ×1.5"},
		{history.Fault{Kind: history.Clock, Target: "client-1", Params: json.RawMessage(`{"offset":-500000000}`)}, "clock client-1 -500ms"},
		{history.Fault{Kind: history.Delay, Target: "client-2", Params: json.RawMessage(`{"nodes":["n1","resource"],"latency":150000000}`)},
			"delay client-2 +150ms ↔ n1,resource"},
		{history.Fault{Kind: history.Delay, Target: "client-2", Params: json.RawMessage(`{"nodes":["n1"],"offset":70000000}`)}, "delay client-2 +70ms ↔ n1"},
		{history.Fault{Kind: history.Partition, Target: "client-3", As: "holder", Params: json.RawMessage(`{"nodes":["n2"]}`)},
			"partition client-3 (holder) ↔ n2"},
		{history.Fault{Kind: history.Partition, Target: "client-1", Params: json.RawMessage(`{"nodes":["n1"],"mode":"drop"}`)},
			"partition client-1 drop ↔ n1"},
		{history.Fault{Kind: history.Partition, Target: "zk1", Params: json.RawMessage(`{"mode":"reset"}`)}, "partition zk1 reset"},
		{history.Fault{Kind: history.Strobe, Target: "n3", Params: json.RawMessage(`{"offset":3000000000,"period":1000000000}`)}, "strobe n3 ±3s"},
		{history.Fault{Kind: history.Pause, Target: "client-1", As: "waiter"}, "pause client-1 (waiter)"},
		{history.Fault{Kind: "crash-restart", Target: "n2"}, "crash-restart n2"},
		{history.Fault{Kind: "disk-full", Target: "n2", Params: json.RawMessage(`{"bytes":5}`)}, "disk-full n2"},
		// Parameters this build cannot read: the label without them, never a failure.
		{history.Fault{Kind: history.Clock, Target: "n1", Params: json.RawMessage(`{"offset":"soon"}`)}, "clock n1"},
	} {
		if got := Label(c.f); got != c.want {
			t.Errorf("Label(%s %s) = %q, want %q", c.f.Kind, c.f.Params, got, c.want)
		}
	}
}

// A fault built as a value may hold its kind's parameters or a pointer to them; another kind's
// are refused, when checked and when carried out.
func TestParametersOfAnotherKindAreRefused(t *testing.T) {
	var got []string
	bad := func(field, format string, a ...any) { got = append(got, field) }
	Check(Fault{Kind: history.Clock, Target: "client-1", Params: &ClockParams{Rate: 2}}, noView{}, bad)
	Check(Fault{Kind: history.Clock, Target: "client-1", Params: ClockParams{Rate: 2}}, noView{}, bad)
	if len(got) != 0 {
		t.Fatalf("a clock's own parameters refused: %v", got)
	}
	Check(Fault{Kind: history.Clock, Target: "client-1", Params: DelayParams{Latency: dur(time.Second)}}, noView{}, bad)
	if len(got) != 1 || got[0] != "fault" {
		t.Fatalf("a delay's parameters on a clock fault: reported %v", got)
	}
	var events []history.Event
	n := New(Config{Targets: map[string]Target{"client-1": &fakeTarget{}}, Record: func(e history.Event) { events = append(events, e) }})
	n.apply(Fault{Kind: history.Clock, Target: "client-1", Params: PartitionParams{}}, false)
	if len(events) != 1 || events[0].Type != history.Fail || !strings.Contains(events[0].Error, "do not belong to a clock fault") {
		t.Fatalf("recorded %+v", events)
	}
}

type noView struct{}

func (noView) Target(name string) (TargetInfo, bool) {
	return TargetInfo{Name: name, Client: true}, true
}
func (noView) ClientLinks() []string { return nil }

// A kind with a server action of its own finds it on the node a target stands for (a role, a
// wrapped node), or has a server that does actions by name do it by name; a server with neither
// refuses it, and Has says so of a provider's nodes before anything starts.
func TestAKindsOwnServerActionIsFoundWhereItIs(t *testing.T) {
	type flusher interface{ Flush() error }
	flush := CapabilityOf[flusher]("flush")
	node := &flushingNode{}
	role := &standIn{stands: &standIn{stands: node}} // a role for a wrapped node
	if err := act(role, "flush", flusher.Flush); err != nil || node.flushed != 1 {
		t.Fatalf("through a role: %v, flushed %d", err, node.flushed)
	}
	hooks := &actor{}
	if err := act(&standIn{stands: hooks}, "flush", flusher.Flush); err != nil || strings.Join(hooks.acts, ",") != "flush" {
		t.Fatalf("by name: %v, %v", err, hooks.acts)
	}
	if err := act(&fakeTarget{}, "flush", flusher.Flush); err == nil || !strings.Contains(err.Error(), "cannot flush") {
		t.Fatalf("a server without it: %v", err)
	}
	lost := errors.New("no leader")
	if err := act(&standIn{err: lost}, "flush", flusher.Flush); !errors.Is(err, lost) {
		t.Fatalf("a role that stands for nothing: %v", err)
	}
	if !flush.Has((*flushingNode)(nil)) || !flush.Has((*actor)(nil)) || flush.Has((*fakeTarget)(nil)) {
		t.Fatal("Has on nodes of a type never started")
	}
}

type fakeTarget struct{}

func (*fakeTarget) Pause() error  { return nil }
func (*fakeTarget) Resume() error { return nil }
func (*fakeTarget) Kill() error   { return nil }

type flushingNode struct {
	fakeTarget
	flushed int
}

func (n *flushingNode) Flush() error { n.flushed++; return nil }

type actor struct {
	fakeTarget
	acts []string
}

func (a *actor) Act(action string) error { a.acts = append(a.acts, action); return nil }

type standIn struct {
	fakeTarget
	stands any
	err    error
}

func (s *standIn) StandsFor() (any, error) { return s.stands, s.err }

// Every flip lands half past a wall-clock second, halfway between two of libfaketime's reads, and
// two flips never share a second, whatever the period (at least the minimum) and start.
func TestStrobeFlipsFallHalfPastASecondEachInItsOwn(t *testing.T) {
	base := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	for _, start := range []time.Duration{0, time.Millisecond, 499 * time.Millisecond, 500 * time.Millisecond, 501 * time.Millisecond, 999 * time.Millisecond} {
		for _, period := range []time.Duration{time.Second, 1200 * time.Millisecond, 1999 * time.Millisecond, 3 * time.Second} {
			first := base.Add(start)
			prev := first
			for k := 1; k <= 20; k++ {
				due := first.Add(time.Duration(k) * period)
				at := flipAt(due, period)
				if at.Before(due) || at.Sub(due) >= time.Second {
					t.Fatalf("start +%v, period %v: flip %d due %v written at %v", start, period, k, due, at)
				}
				if at.Nanosecond() != 5e8 {
					t.Fatalf("start +%v, period %v: flip %d at %v, not half past a second", start, period, k, at)
				}
				if at.Sub(prev) < time.Second {
					t.Fatalf("start +%v, period %v: flips %v and %v share a second", start, period, prev, at)
				}
				prev = at
			}
		}
	}
}
