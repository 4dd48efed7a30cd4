// Package synth writes long histories of a correct lock, shaped like a real run's: clients that
// take a fenced lock in turn, each critical section reading and writing every register, the
// resource's own access log and final values at the end. It exists to measure and test what a
// soak run's history costs to judge and to draw (lockbench, the report's browser test) without
// running for half an hour. It is not a model of any lock: every generated run is correct,
// except for what Options asks for (a write of unknown outcome, a stale read).
package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Registers are the resource's registers, as a lock with a token and a random value reaches them.
var Registers = []string{"unfenced", "fenced-write", "fenced-rw", "cas-random"}

// Options shape a generated run. Zero values take the defaults.
type Options struct {
	Events  int // about this many events in all (default 1M)
	Clients int // default 4
	// Cycle is one tenure: acquire, read, hold, write, release (default 18ms, so that 1M events
	// span about 30 minutes, as a soak at a few hundred operations per second would).
	Cycle time.Duration
	// UnknownAt, in (0, 1): the holder's write at this fraction of the run times out (info, its
	// outcome unknown to the client). UnknownLanded says whether it really took effect: the
	// resource's log and every later read agree with it.
	UnknownAt     float64
	UnknownLanded bool
	// Pauses: this many SIGSTOP pauses of a waiting client, spread over the run, as a random
	// nemesis would leave in the history (harmless: the client was not holding the lock).
	Pauses int
	// StaleReadAt, in (0, 1): the unfenced register's read at this fraction of the run returns one
	// less than the register holds (a known-bad history: not linearizable, one update lost).
	StaleReadAt float64
	// DoubleOwnership: this many tenures, spread over the run, whose holder releases the lock a
	// cycle late, after the next holder took it (as a lease that expired under a paused holder
	// would allow): a known violation of mutual exclusion, with every register still correct.
	DoubleOwnership int
	Seed            uint64
}

func (o Options) withDefaults() Options {
	if o.Events <= 0 {
		o.Events = 1_000_000
	}
	if o.Clients <= 0 {
		o.Clients = 4
	}
	if o.Cycle <= 0 {
		o.Cycle = 18 * time.Millisecond
	}
	return o
}

// eventsPerCycle: 8 client events (acquire, read, write, release: invoke and completion) and the
// resource's two log entries.
const eventsPerCycle = 10

// Stats say what was generated.
type Stats struct {
	Events, Cycles int
	Length         time.Duration
}

// WriteRun makes dir a run folder: history.jsonl and a scenario.yaml that expects a correct run.
func WriteRun(dir string, o Options) (Stats, error) {
	o = o.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Stats{}, err
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return Stats{}, err
	}
	st, err := Write(f, o)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return st, err
	}
	return st, os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(Scenario(o, st)), 0o644)
}

// Scenario is a scenario file matching a generated run: set-nx-px, its clients and length, and
// the verdict a correct run must reach.
func Scenario(o Options, st Stats) string {
	o = o.withDefaults()
	return fmt.Sprintf(`# A generated soak-length history (package history/synth), not a real run.
name: synthetic-soak-set-nx-px
lock: set-nx-px
clients: %d
ttl: 1s
duration: %s
seed: 1
workload: {hold: 5ms, think: 10ms, stagger: 1ms}
expect:
  mutual_exclusion: holds
  registers:
    unfenced:     {linearizable: true, lost_updates: false}
    fenced-write: {linearizable: true, lost_updates: false}
    fenced-rw:    {linearizable: true, lost_updates: false}
    cas-random:   {linearizable: true, lost_updates: false}
  liveness: {stuck: false, min_acquisitions: %d}
`, o.Clients, max(st.Length, time.Second).Round(time.Millisecond), st.Cycles/2)
}

// Write writes a generated history to w, in time order.
func Write(w io.Writer, o Options) (Stats, error) {
	o = o.withDefaults()
	g := &gen{o: o, rng: rand.New(rand.NewPCG(o.Seed, 17)), out: bufio.NewWriterSize(w, 1<<20),
		ops: map[string]int64{}, cs: map[string]int64{}}
	cycles := max(1, (o.Events-4)/eventsPerCycle)
	g.run(cycles)
	if err := g.flush(1 << 62); err != nil {
		return Stats{}, err
	}
	if err := g.out.Flush(); err != nil {
		return Stats{}, err
	}
	return Stats{Events: g.written, Cycles: cycles, Length: time.Duration(g.end - base)}, g.err
}

// base is the generated run's CLOCK_MONOTONIC start: a machine up for a while.
const base = int64(3_600e9)

type gen struct {
	o       Options
	rng     *rand.Rand
	out     *bufio.Writer
	pending []history.Event // not yet written: sorted and flushed behind the generation front
	log     []history.Event // the resource's own log, written at the end
	ops     map[string]int64
	cs      map[string]int64
	seq     int64
	end     int64
	written int
	err     error
}

func (g *gen) emit(e history.Event) { g.pending = append(g.pending, e) }

// flush writes, in time order, every pending event before horizon.
func (g *gen) flush(horizon int64) error {
	sort.SliceStable(g.pending, func(i, j int) bool { return g.pending[i].Time < g.pending[j].Time })
	n := sort.Search(len(g.pending), func(i int) bool { return g.pending[i].Time >= horizon })
	for _, e := range g.pending[:n] {
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		g.out.Write(append(line, '\n'))
		g.written++
	}
	g.pending = append(g.pending[:0], g.pending[n:]...)
	return nil
}

func (g *gen) op(p string, t int64, typ history.Type, f string, e history.Event) int64 {
	if typ == history.Invoke {
		g.ops[p]++
	}
	e.Time, e.Process, e.Type, e.F, e.Op = t, p, typ, f, g.ops[p]
	g.emit(e)
	return e.Op
}

// regs is every register at value, except unfenced, which is lag behind (after a lost update).
func regs(value, lag int64, status string) map[string]history.Register {
	m := make(map[string]history.Register, len(Registers))
	for _, r := range Registers {
		m[r] = history.Register{Value: value, Status: status}
	}
	m["unfenced"] = history.Register{Value: value - lag, Status: status}
	return m
}

func (g *gen) logAccess(f, client string, cs, token int64, r map[string]history.Register) {
	g.seq++
	g.log = append(g.log, history.Event{Process: history.Resource, Type: history.Note, F: f, Target: client,
		CS: cs, Token: history.TokenOf(token), Registers: r, Seq: g.seq})
}

func (g *gen) run(cycles int) {
	o := g.o
	cycle := int64(o.Cycle)
	ms := int64(time.Millisecond)
	g.emit(history.Event{Time: base, Process: history.Controller, Type: history.Note, F: history.Start,
		Duration: int64(cycles) * cycle})
	clients := make([]string, o.Clients)
	wantSince := make([]int64, o.Clients) // when each client invoked its pending acquire
	for i := range clients {
		clients[i] = history.Client(i + 1)
		wantSince[i] = base + int64(i+1)*ms
		g.op(clients[i], wantSince[i], history.Invoke, history.Acquire, history.Event{})
	}
	pausedUntil := make([]int64, o.Clients)
	pauseEvery := 0
	if o.Pauses > 0 {
		pauseEvery = max(1, cycles/(o.Pauses+1))
	}
	overlapEvery := 0
	if o.DoubleOwnership > 0 {
		overlapEvery = max(1, cycles/(o.DoubleOwnership+1))
	}
	unknownAt, staleAt := -1, -1
	if o.UnknownAt > 0 && o.UnknownAt < 1 {
		unknownAt = int(float64(cycles) * o.UnknownAt)
	}
	if o.StaleReadAt > 0 && o.StaleReadAt < 1 {
		staleAt = int(float64(cycles) * o.StaleReadAt)
	}
	paused, overlapped := 0, 0
	var value int64 // every register's true value (all move together in a correct run)
	var lag int64   // how far unfenced is behind, after the stale read
	waiting := make([]bool, o.Clients)
	for i := range waiting {
		waiting[i] = true
	}
	t := base + int64(o.Clients+1)*ms
	next := 0
	for k := 0; k < cycles; k++ {
		// The next holder: round robin, skipping a paused client.
		p := next
		for tries := 0; tries < o.Clients && pausedUntil[p] > t; tries++ {
			p = (p + 1) % o.Clients
		}
		next = (p + 1) % o.Clients
		c := clients[p]
		jitter := func(n int64) int64 { return n + g.rng.Int64N(n/4+1) }
		token := int64(k + 1)
		acquired := max(t+jitter(ms/2), wantSince[p]+ms/2)
		g.op(c, acquired, history.OK, history.Acquire, history.Event{Token: history.TokenOf(token)})
		g.cs[c]++
		cs := g.cs[c]
		r0 := acquired + jitter(ms/5)
		r1 := r0 + jitter(ms/2)
		waiting[p] = false
		if k == staleAt {
			lag++ // this read returns a value the register no longer holds; its write loses an update
		}
		read := regs(value, lag, history.Accepted)
		g.op(c, r0, history.Invoke, history.Read, history.Event{CS: cs, Token: history.TokenOf(token)})
		g.op(c, r1, history.OK, history.Read, history.Event{CS: cs, Token: history.TokenOf(token), Registers: read})
		g.logAccess(history.Read, c, cs, token, read)
		w0 := r1 + jitter(5*ms)
		g.op(c, w0, history.Invoke, history.Write, history.Event{CS: cs, Token: history.TokenOf(token), Registers: regs(value+1, lag, history.Unknown)})
		var w1 int64
		if k == unknownAt {
			w1 = w0 + 4*250*ms/10 // the worker's bound on an operation, shortened
			g.op(c, w1, history.Info, history.Write, history.Event{CS: cs, Token: history.TokenOf(token),
				Registers: regs(value+1, lag, history.Unknown), Error: "context deadline exceeded"})
			if o.UnknownLanded {
				g.logAccess(history.Write, c, cs, token, regs(value+1, lag, history.Accepted))
				value++
			}
		} else {
			w1 = w0 + jitter(ms/2)
			written := regs(value+1, lag, history.Accepted)
			g.op(c, w1, history.OK, history.Write, history.Event{CS: cs, Token: history.TokenOf(token), Registers: written})
			g.logAccess(history.Write, c, cs, token, written)
			value++
		}
		rel0 := w1 + jitter(ms/5)
		rel1 := rel0 + jitter(ms/2)
		handOver := rel1 // when the next holder may take the lock
		if overlapEvery > 0 && k%overlapEvery == (k/overlapEvery)%o.Clients && k < cycles-1 && overlapped < o.DoubleOwnership {
			overlapped++
			rel0, rel1 = rel0+cycle, rel1+cycle // released after the next holder took it
		}
		g.op(c, rel0, history.Invoke, history.Release, history.Event{})
		g.op(c, rel1, history.OK, history.Release, history.Event{})
		// Think, then ask again.
		wantSince[p] = rel1 + jitter(10*ms)
		if pauseEvery > 0 && k%pauseEvery == pauseEvery-1 && paused < o.Pauses {
			paused++
			// Pause a client that is waiting (not the holder), for a few cycles.
			q := (p + 2) % o.Clients
			from, to := rel1+ms, rel1+ms+3*cycle
			g.emit(history.Event{Time: from, Process: history.Nemesis, Type: history.Invoke, F: history.Pause,
				Op: int64(k), Target: clients[q], Duration: to - from})
			g.emit(history.Event{Time: to, Process: history.Nemesis, Type: history.OK, F: history.Pause,
				Op: int64(k), Target: clients[q]})
			pausedUntil[q] = to
		}
		if k < cycles-1 {
			g.op(c, wantSince[p], history.Invoke, history.Acquire, history.Event{})
			waiting[p] = true
		}
		t = max(handOver, t+cycle-2*ms)
		if len(g.pending) > 4096 {
			if g.err = g.flush(t - 100*cycle); g.err != nil {
				return
			}
		}
	}
	// The clients still waiting give up when told to stop.
	end := t + 50*ms
	for i, c := range clients {
		if waiting[i] {
			g.op(c, end-ms, history.Fail, history.Acquire, history.Event{Error: "gave up: lock busy"})
		}
	}
	final := regs(value, lag, "")
	g.emit(history.Event{Time: end, Process: history.Resource, Type: history.Note, F: history.Final, Registers: final})
	for _, e := range g.log {
		e.Time = end
		g.emit(e)
	}
	g.log = nil
	g.emit(history.Event{Time: end + ms, Process: history.Controller, Type: history.Note, F: history.End})
	g.end = end + ms
}
