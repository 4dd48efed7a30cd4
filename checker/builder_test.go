package checker

import (
	"github.com/lockcheck/lockcheck/history"
)

// The hand-made histories of these tests are written in milliseconds from the run's start.
func ms(t float64) int64 { return int64(t * 1e6) }

// builder writes small histories the way the harness records them: invoke/completion pairs with
// per-process op numbers, and notes from the controller, nemesis and resource.
type builder struct {
	events []history.Event
	ops    map[string]int64
}

func newHistory() *builder { return &builder{ops: map[string]int64{}} }

func (b *builder) add(e history.Event) *builder {
	b.events = append(b.events, e)
	return b
}

// op records an invoke at inv and, unless done < 0, a completion of type typ at done. edit, if
// set, fills in both events (CS, registers, token).
func (b *builder) op(p, f string, inv, done float64, typ history.Type, edit func(*history.Event)) *builder {
	b.ops[p]++
	invoke := history.Event{Time: ms(inv), Process: p, Type: history.Invoke, F: f, Op: b.ops[p]}
	completion := invoke
	completion.Time, completion.Type = ms(done), typ
	if edit != nil {
		edit(&invoke)
		edit(&completion)
	}
	invoke.Registers, invoke.Token = nil, nil // only completions carry outcomes
	b.add(invoke)
	if done >= 0 {
		b.add(completion)
	}
	return b
}

func (b *builder) acquire(p string, inv, ok float64) *builder {
	return b.op(p, history.Acquire, inv, ok, history.OK, nil)
}

func (b *builder) acquireToken(p string, inv, ok float64, token int64) *builder {
	return b.op(p, history.Acquire, inv, ok, history.OK, func(e *history.Event) { e.Token = history.TokenOf(token) })
}

// acquireFails records failed attempts every `every` ms from `from` until `to`.
func (b *builder) acquireFails(p string, from, to, every float64) *builder {
	for t := from; t+every <= to; t += every {
		b.op(p, history.Acquire, t, t+every-0.5, history.Fail, nil)
	}
	return b
}

func (b *builder) release(p string, inv, done float64) *builder {
	return b.op(p, history.Release, inv, done, history.OK, nil)
}

// hold is a whole tenure: acquired at `from` (invoked 1ms before), released at `to`.
func (b *builder) hold(p string, from, to float64) *builder {
	return b.acquire(p, from-1, from).release(p, to, to+0.5)
}

// access is the read or write half of critical section cs; its type follows its registers'
// statuses (info when none is known).
func (b *builder) access(f, p string, cs int64, inv, done float64, regs ...reg) *builder {
	typ := history.Info
	m := map[string]history.Register{}
	for _, r := range regs {
		m[r.name] = history.Register{Value: r.value, Status: r.status}
		if r.status != history.Unknown {
			typ = history.OK
		}
	}
	return b.op(p, f, inv, done, typ, func(e *history.Event) { e.CS, e.Registers = cs, m })
}

func (b *builder) read(p string, cs int64, inv, done float64, regs ...reg) *builder {
	return b.access(history.Read, p, cs, inv, done, regs...)
}

func (b *builder) write(p string, cs int64, inv, done float64, regs ...reg) *builder {
	return b.access(history.Write, p, cs, inv, done, regs...)
}

// increment is a serial critical section at t: reads v of each register, writes v+1, both accepted.
func (b *builder) increment(p string, cs int64, t float64, regs ...reg) *builder {
	var writes []reg
	for _, r := range regs {
		writes = append(writes, accepted(r.name, r.value+1))
	}
	return b.read(p, cs, t, t+0.25, regs...).write(p, cs, t+0.5, t+0.75, writes...)
}

func (b *builder) note(p, f string, t float64, target string) *builder {
	return b.add(history.Event{Time: ms(t), Process: p, Type: history.Note, F: f, Target: target})
}

func (b *builder) start(t float64) *builder { return b.note(history.Controller, history.Start, t, "") }
func (b *builder) end(t float64) *builder   { return b.note(history.Controller, history.End, t, "") }
func (b *builder) crash(p string, t float64) *builder {
	return b.note(history.Controller, history.Crash, t, p)
}
func (b *builder) kill(p string, t float64) *builder {
	return b.note(history.Nemesis, history.Kill, t, p)
}

func (b *builder) pause(p string, from, to float64) *builder {
	b.add(history.Event{Time: ms(from), Process: history.Nemesis, Type: history.Invoke, F: history.Pause, Target: p, Duration: ms(to - from)})
	return b.add(history.Event{Time: ms(to), Process: history.Nemesis, Type: history.OK, F: history.Pause, Target: p})
}

func (b *builder) final(t float64, values map[string]int64) *builder {
	m := map[string]history.Register{}
	for name, v := range values {
		m[name] = history.Register{Value: v}
	}
	return b.add(history.Event{Time: ms(t), Process: history.Resource, Type: history.Note, F: history.Final, Registers: m})
}

// build returns the history in time order, as history.Decode would.
func (b *builder) build() []history.Event {
	out := append([]history.Event(nil), b.events...)
	history.Sort(out)
	return out
}

type reg struct {
	name   string
	value  int64
	status string
}

func accepted(name string, v int64) reg { return reg{name, v, history.Accepted} }
func rejected(name string, v int64) reg { return reg{name, v, history.Rejected} }
func unknown(name string, v int64) reg  { return reg{name, v, history.Unknown} }
