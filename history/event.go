// Package history defines what a run records and how it is stored: one ordered log of events,
// JSON lines, appended as things happen so that a run killed halfway still leaves a history the
// checker can judge. Everything else in lockcheck depends on this package; it depends on nothing
// of lockcheck.
//
// The conventions are Jepsen's: every client operation is recorded twice, an invoke and then its
// completion (ok, fail or info). "info" means the outcome is unknown (a timeout, a crash): the
// operation may or may not have taken effect, and it is never dropped or guessed.
package history

import (
	"encoding/json"
	"strconv"
)

// Type says what kind of record an event is.
type Type string

const (
	Invoke Type = "invoke" // an operation starts
	OK     Type = "ok"     // it completed and took effect
	Fail   Type = "fail"   // it completed and certainly did not take effect
	Info   Type = "info"   // its outcome is unknown (timeout, crash)
	Note   Type = "note"   // something happened that is not an operation (node start, pause point reached, run end)
)

// Operation names ("f" in the log).
const (
	Acquire = "acquire" // take the lock (with retries); ok carries the fencing token when the lock has one
	Release = "release" // give the lock back
	Read    = "read"    // the read half of a critical section, on every register at once
	Write   = "write"   // the write half of a critical section, on every register at once
	// A process died: a client (a note, written by the controller) or, from the nemesis, a server
	// killed with SIGKILL (invoke) and started again (ok).
	Crash = "crash"
	Lost  = "lost" // a client stopped believing it holds the lock: its validity ended, its session expired (note)
	// A client woke from one of its own waits (a hold, a think time, a retry's backoff) later
	// than it asked, by Duration (note, written as it woke): the machine did not run it on time.
	Late = "late"
	// Check: the holder asks its lock whether it still holds it before an access (ok: yes;
	// fail: no, and a Lost note follows). Renew: the lock renewed its lease or session on its own
	// (a watchdog, a keep-alive, a session's heartbeat), as the design reports it; ok: the
	// servers said yes. Neither changes who holds the lock; their yes answers are promises.
	Check = "check"
	Renew = "renew"
	// Reentrant designs: the holder takes the lock again and gives the inner level back. These
	// do not change who holds the lock.
	Reacquire = "reacquire"
	Rerelease = "rerelease"
	// Abandoned: the client gave up the acquire attempt in flight (cancelled its context), as a
	// usage step asked, at Point's Pass-th pass or at once (note). Error says why a step found no
	// attempt to give up. The attempt's outcome is the acquire's, as ever: a yes is a promise.
	Abandoned = "abandoned"

	// LeaseKept: what the lock's servers keep for the run's lock, as they said it after the
	// first grant (note): Target is the server, Duration the lease (as granted when the server
	// says; otherwise the most it had left), Params {"what", "asked_ns" (the scenario's TTL),
	// "granted"}. A library may round its lease up or ask for one of its own.
	LeaseKept = "lease"

	// Fault names ("f" of the nemesis's events). Package nemesis's registry names every kind of
	// fault; these are the ones written before the registry existed, and the two the checker
	// interprets (a killed client holds nothing any more; a clock set without a length stays set).
	Pause     = "pause"     // SIGSTOP of a process (invoke) until SIGCONT (ok)
	Kill      = "kill"      // SIGKILL of a client
	Clock     = "clock"     // a target's clock set to Offset and Rate (invoke), and back (ok)
	Partition = "partition" // a client's links (or a server's peer links) cut (invoke) and healed (ok)
	Delay     = "delay"     // a client's links delayed by Latency (invoke) and healed (ok)
	Strobe    = "strobe"    // a server's clock flipped between true time and Offset (invoke, notes) until reset (ok)

	Final = "final" // the resource's final register values, read by the controller after the clients stopped
	Start = "start" // the run started (note)
	End   = "end"   // the run ended (note); Error says why if it was cut short
)

// ClientDesign names the lock design a client runs: a controller's note at the start, one per
// client (Target is the client, Design the design's name).
const ClientDesign = "design"

// Process names that are not clients.
const (
	Nemesis    = "nemesis"
	Resource   = "resource"
	Controller = "controller"
)

// Register outcomes in a Read or Write.
const (
	Accepted = "ok"       // the access took effect
	Rejected = "rejected" // the resource refused it: the token was lower than one it had seen
	Unknown  = "unknown"  // the client never learned the outcome
)

// Event is one line of a history. Fields that do not apply to an event are omitted.
type Event struct {
	Time    int64  `json:"t"`       // nanoseconds of CLOCK_MONOTONIC, shared by every process on the machine
	Process string `json:"process"` // "client-1", "nemesis", "resource", "controller"
	Type    Type   `json:"type"`
	F       string `json:"f"`
	// Op pairs an invoke with its completion: it is unique per process.
	Op int64 `json:"op,omitempty"`
	// CS numbers a client's critical sections; the read and write of one section share it.
	CS int64 `json:"cs,omitempty"`
	// Token is the fencing token the lock handed out (acquire ok) or the one an access carried.
	Token *int64 `json:"token,omitempty"`
	// Registers holds per-register values and outcomes of a Read, Write or Final. The resource's
	// own log has one Read or Write note per access (process "resource", Target the client).
	Registers map[string]Register `json:"registers,omitempty"`
	// Role is "read" on an acquire of a read/write lock's shared (read) side, "write" on its
	// exclusive side; empty for plain mutexes. Readers may hold together.
	Role string `json:"role,omitempty"`
	// Target names what a nemesis acted on, or the client a resource access came from.
	Target string `json:"target,omitempty"`
	// As is the lock state a fault's target was chosen by ("holder", "waiter", "overtaken"):
	// Target is the client that was in it when the fault started.
	As string `json:"as,omitempty"`
	// Point is the program point a client stopped at ("after-acquire", "before-write"), and Pass
	// which time it was passing it (1 = first).
	Point string `json:"point,omitempty"`
	Pass  int    `json:"pass,omitempty"`
	// Duration (nanoseconds) of a fault, when it was planned with one.
	Duration int64 `json:"duration,omitempty"`
	// Params are a fault's own parameters, a JSON object as its kind wrote it (a clock's offset
	// and rate, a partition's nodes): package nemesis's kinds read them, nothing here does but
	// Faults for a clock. On a ClientDesign note they are the client's clock as the scenario set
	// it from the start (offset in nanoseconds, rate), when it did. Histories written before faults kept their parameters here have them
	// as keys of the event (nodes, offset, rate, latency); the decoder gathers those into Params.
	Params json.RawMessage `json:"params,omitempty"`
	Error  string          `json:"error,omitempty"`
	// Design is the lock design a client runs (a ClientDesign note).
	Design string `json:"design,omitempty"`
	// Seq is the resource's own sequence number for an Access: the order it applied them in.
	Seq int64 `json:"seq,omitempty"`
	// Server, on the run's start note, is what the lock servers run, as they report it, when the
	// service says ("etcd 3.4.3 (built from go.etcd.io/etcd@...)").
	Server string `json:"server,omitempty"`

	// Promise (nanoseconds), on the ok of an acquire, reacquire, check or renew, is how long the
	// lock promised the client it holds, counted from Since (or the op's invoke when Since is
	// absent): the lease the answer granted. Forever: until the client gives the lock back.
	// Absent: the answer promised nothing that lasts (a check the client made on its own).
	Promise int64 `json:"promise_ns,omitempty"`
	// Since (CLOCK_MONOTONIC) is when the request behind a promise was sent, when that is not the
	// op's invoke: an acquire retries, and only its last attempt's request was answered yes.
	Since int64 `json:"since_ns,omitempty"`
	// Session names the lease or session a promise lives on ("lease 694d8c3a1f2b"), for designs
	// that have one: a renewal speaks for the holds of its own session only.
	Session string `json:"session,omitempty"`
	// Rule, on a ClientDesign note, is what the design promises a holder. A history whose design
	// notes carry no rule was written before lockcheck recorded promises.
	Rule *PromiseRule `json:"rule,omitempty"`
	// Weakness, on the invoke of a fault that acts on a lock server, names the documented weakness
	// of lock services it exercises, when it does ("clock": the server's clock moved, so its
	// leases end early; "crash": what the server had not persisted or replicated is lost).
	Weakness string `json:"weakness,omitempty"`
}

// Forever is a Promise that lasts until the client gives the lock back.
const Forever int64 = -1

// PromiseRule is what a lock design promises a holder, as a client's design note records it.
type PromiseRule struct {
	Words string `json:"words"` // the rule in words: "the lease (400ms) from each acquire or renewal"
	// Slack is how long past a promise's end the lock's servers may still keep it: a ZooKeeper
	// session expires on the next tick, etcd revokes expired leases in a loop. A client cut off
	// for longer than its promise and the slack certainly lost whatever it held.
	Slack int64 `json:"slack_ns,omitempty"`
	// ClientClocks: the lock's expiry is reckoned by its clients' own clocks (a GETSET lock), so a
	// client's clock fault is a fault of the lock's own time.
	ClientClocks bool `json:"client_clocks,omitempty"`
	// Connection: a promise lasts only while the client's connection to the lock's server does
	// (a database session lock): a cut of the client's links ends it.
	Connection bool `json:"connection,omitempty"`
}

// Register is one register's part in an access.
type Register struct {
	Value  int64  `json:"value"`
	Status string `json:"status,omitempty"` // Accepted, Rejected or Unknown; empty in Final
}

// Client is the process name of the i-th client (1-based).
func Client(i int) string { return "client-" + strconv.Itoa(i) }

// TokenOf returns a pointer to t, for Event.Token.
func TokenOf(t int64) *int64 { return &t }
