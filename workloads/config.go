// Package workloads is what a client does with a lock, and the worker process that does it. Each
// client runs as its own OS process (`lockcheck worker`) so that a SIGSTOP freezes all of it at
// once: workload, background renewals, replies sitting unread in socket buffers.
//
// The controller writes a Config as the first JSON line on the worker's stdin, and later a
// Command; the worker writes history events, one JSON line each, on stdout. Its logs go to stderr.
package workloads

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
)

// Program points where a scenario can stop a client. Lock designs may mark more points of their
// own through locks.Env.Point.
const (
	AfterAcquire = "after-acquire" // the lock was just granted; nothing touched yet (K2)
	BeforeWrite  = "before-write"  // the section has read and is about to write (K3)
	// AfterValidityCheck follows the client's last check that it still holds the lock (for
	// designs that know their validity), right before the write: a pause here is K3 exactly.
	AfterValidityCheck = "after-validity-check"
)

// Points lists the program points every workload passes through.
var Points = []string{AfterAcquire, BeforeWrite, AfterValidityCheck}

// Stopped is the note a worker writes just before it stops itself at a program point.
const Stopped = "stopped"

// Ready is the note a worker writes once its lock client is built (an external design's program
// started and answered init); Spawn's handle consumes it (it is not history). Broken is the note
// it writes before exiting when its lock client cannot be built or broke for good (an external
// program that died or broke the protocol); Error says why.
const (
	Ready  = "ready"
	Broken = "broken"
)

// Workload shapes each client's loop: acquire → read every register → hold → write → release.
// A reader of a read/write lock stops after the hold: its section is read-only. It is the
// scenario's `workload:` block as written (lengths in time units, or in TTLs until the scenario
// loader resolves them), and what the worker is sent; Stagger, Start and Readers are the
// runner's to apply (Config.StartDelay, Config.Role).
type Workload struct {
	// Hold is the time between the read and the write: the "work" done under the lock.
	Hold yamltime.Duration `yaml:"hold" json:"hold"`
	// Think is the pause between releasing and trying again (0 lets a releaser win again at once).
	Think yamltime.Duration `yaml:"think" json:"think"`
	// Stagger: client-N starts (N-1)*stagger after client-1, so who goes first is deterministic.
	Stagger yamltime.Duration `yaml:"stagger" json:"stagger"`
	// Start: every client waits this long before its first acquire, so faults planned at 0s are
	// in force first.
	Start yamltime.Duration `yaml:"start" json:"start"`
	// AcquireTimeout is how long one acquire keeps retrying before it gives up.
	AcquireTimeout yamltime.Duration `yaml:"acquire_timeout" json:"acquire_timeout"`
	// BackoffMin and BackoffMax bound the retry delay after a busy attempt, drawn from [min, max].
	BackoffMin yamltime.Duration `yaml:"backoff_min" json:"backoff_min"`
	BackoffMax yamltime.Duration `yaml:"backoff_max" json:"backoff_max"`
	// Timeout bounds each command to a lock node or the resource.
	Timeout yamltime.Duration `yaml:"timeout" json:"timeout"`
	// Attempt bounds one acquire attempt: one call of the lock's Acquire, whose context ends
	// then (or when AcquireTimeout does, if sooner). 0: four command timeouts (AttemptBound). A
	// lock that takes over an abandoned lease only while one Acquire waits needs an attempt
	// longer than the lease.
	Attempt yamltime.Duration `yaml:"attempt" json:"attempt"`
	// Reentrant: take the lock a second time inside the hold, give it back before the outer
	// release (usage: {reenter: 1}).
	Reentrant bool `yaml:"reentrant" json:"reentrant"`
	// Usage is what each client does with the lock besides one acquire and one release, every
	// cycle (locks.UsageSteps; aimed steps such as abandon are nemesis entries).
	Usage Usage `yaml:"usage" json:"usage"`
	// Readers: for read/write designs, client-1..client-N read and the others write.
	Readers int `yaml:"readers" json:"readers"`
}

// Usage is a workload's usage: block, one field per step of locks.UsageSteps that a client
// takes every cycle, keyed by the step's name.
type Usage struct {
	// Reenter: how many inner acquires a hold nests, each given back (innermost first) before
	// the hold's work (0: none; reentrant: true is 1).
	Reenter int `yaml:"reenter" json:"reenter,omitempty"`
	// Try: each acquire is one attempt that waits at most this long (0s: not at all) and is not
	// retried; nil: acquires retry until acquire_timeout.
	Try *yamltime.Duration `yaml:"try" json:"try,omitempty"`
	// ReleaseRetry: a release whose outcome was unknown (an error, a timeout) is sent again, up
	// to this many times.
	ReleaseRetry int `yaml:"release-retry" json:"release_retry,omitempty"`
}

// Steps lists the steps u asks for, by their names in locks.UsageSteps.
func (u Usage) Steps() []string {
	var out []string
	if u.Reenter > 0 {
		out = append(out, locks.UsageReenter)
	}
	if u.Try != nil {
		out = append(out, locks.UsageTry)
	}
	if u.ReleaseRetry > 0 {
		out = append(out, locks.UsageReleaseRetry)
	}
	return out
}

// Depth is how many inner acquires a hold nests: usage's reenter, or 1 for reentrant: true.
func (w Workload) Depth() int {
	if w.Usage.Reenter == 0 && w.Reentrant {
		return 1
	}
	return w.Usage.Reenter
}

// Steps lists the usage steps the workload asks for (reentrant: true is reenter).
func (w Workload) Steps() []string {
	steps := w.Usage.Steps()
	if w.Reentrant && w.Usage.Reenter == 0 {
		steps = append([]string{locks.UsageReenter}, steps...)
	}
	return steps
}

// AttemptBound is how long one acquire attempt may take: Attempt, or four command timeouts (an
// acquire may take a Redis script or several statements), and never past AcquireTimeout.
func (w Workload) AttemptBound() time.Duration {
	d := w.Attempt.D()
	if d <= 0 {
		d = 4 * w.Timeout.D()
	}
	if w.AcquireTimeout > 0 {
		d = min(d, w.AcquireTimeout.D())
	}
	return d
}

// StopAt asks the worker to stop itself (SIGSTOP) the Occurrence-th time it passes Point; what
// happens next (resume after a while, or SIGKILL) is the controller's business.
// Every asks it to stop at each pass instead (until a "disarm" command for Point; "arm" starts
// that later): the controller then picks which pass a fault takes, by the lock state the history
// shows.
type StopAt struct {
	Point      string `json:"point"`
	Occurrence int    `json:"occurrence,omitempty"`
	Every      bool   `json:"every,omitempty"`
}

// Config is everything a worker needs, sent as its first line of input.
type Config struct {
	Client string `json:"client"`
	Lock   string `json:"lock"`
	// Endpoints are the lock service as this client reaches it: through its own links.
	Endpoints locks.Endpoints `json:"endpoints"`
	Resource  string          `json:"resource"` // the protected resource, through this client's link
	Key       string          `json:"key"`
	TTL       time.Duration   `json:"ttl"`
	Workload  Workload        `json:"workload"`
	// StartDelay is how long this client waits before its first acquire (the workload's start
	// and its place in the stagger).
	StartDelay time.Duration `json:"start_delay"`
	StopAt     []StopAt      `json:"stop_at,omitempty"`
	Clock      ClockSetting  `json:"clock"`
	Role       string        `json:"role,omitempty"` // "read" or "write" for read/write designs: readers only read
	Seed       int64         `json:"seed"`
	// External defines the lock when it is an external design the scenario defined (inline or
	// in a design file), which the worker's registry does not hold; Lock is then its name.
	External *locks.Program `json:"external,omitempty"`
	// AwaitGo makes the worker wait, once Ready, for a "go" command before its first acquire,
	// so the controller can start every client (and the run's clock) together.
	AwaitGo bool `json:"await_go,omitempty"`
}

// ClockSetting is a client clock's offset from real time and its rate (0 or 1: true speed).
type ClockSetting struct {
	Offset time.Duration `json:"offset"`
	Rate   float64       `json:"rate"`
}

// Command is a later line of input: "go" (start, when the config said AwaitGo), "stop" (finish
// the current cycle, release, exit), "clock" (set the client's clock), "arm" (stop at each pass
// of Point) or "disarm" (no more), "step" (take the aimed usage step Step: now, or at the
// Occurrence-th pass of Point from now on while it can).
type Command struct {
	Cmd   string       `json:"cmd"`
	Clock ClockSetting `json:"clock,omitempty"`
	Point string       `json:"point,omitempty"`
	// Step and Occurrence: a "step" command's.
	Step       string `json:"step,omitempty"`
	Occurrence int    `json:"occurrence,omitempty"`
	// At is when "go" was given (history.Now, one clock for every process): a client's
	// StartDelay counts from it, not from when its worker read the line, which on a busy
	// machine can be tens of milliseconds later for one client than for another.
	At int64 `json:"at,omitempty"`
}

// StopCommand is the line that ends a worker.
var (
	StopCommand = mustJSON(Command{Cmd: "stop"})
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return append(b, '\n')
}
