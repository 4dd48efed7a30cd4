// Package checker judges a recorded history: mutual exclusion (who believed they held the lock at
// the same time), each protected register (linearizable? updates lost?) and liveness (latency, time
// nobody could take the lock, a lock stuck forever). It reads a history into a compact Log (Load,
// or FromEvents in memory) and judges it (Log.Check): the verdict depends on the history alone
// (the Log keeps what Check found only to draw it afterwards, Visualize), and the checker knows
// nothing of the lock or the storage that produced the history.
package checker

import "time"

// Linearizability answers, as strings so that verdict.json reads without a legend.
const (
	Yes           = "yes"
	No            = "no"
	Unknown       = "unknown" // porcupine ran out of time: no guess either way
	NotApplicable = "n/a"     // the register was never accessed (a lock without fencing tokens)
)

// Verdict is everything the checker concludes about one run; the caller writes it as verdict.json.
// Durations are integers of nanoseconds (time.Duration's JSON form), hence the _ns suffixes.
type Verdict struct {
	RunStart        int64                      `json:"run_start_ns"` // CLOCK_MONOTONIC of the run's start
	RunLength       time.Duration              `json:"run_length_ns"`
	Events          int                        `json:"events"`
	MutualExclusion MutualExclusion            `json:"mutual_exclusion"`
	Registers       map[string]RegisterVerdict `json:"registers"`
	Liveness        Liveness                   `json:"liveness"`
	Fairness        Fairness                   `json:"fairness"` // first come, first served? (fairness.go)
	// Collateral is the harm done to legitimate holders: failed releases, fencing that refused
	// them, tokens out of order (collateral.go).
	Collateral Collateral `json:"collateral"`
	// FaultFree: the history records no action of the nemesis at all. A lock that fails in such a
	// run fails in normal operation, and fencing does not make that a rescue (Judge). Verdicts
	// written before the field existed read false.
	FaultFree bool `json:"fault_free,omitempty"`
	// Unexercised, when not empty, says why none of the run's faults put the lock to the test
	// (exercised.go): a holder cut off past its lease that nobody took the lock over from, a
	// fault on a server nobody was using. The outcome stands, but it says nothing about the
	// fault. Empty when a fault was exercised, or when the run had none (FaultFree).
	Unexercised string `json:"unexercised,omitempty"`
	// Inconclusive, when not empty, says why the run proves nothing either way (no client ever
	// held the lock, the lock service never answered, fewer acquisitions than the scenario asks
	// for): a clean verdict on such a run is no evidence, and it fails any expect block.
	Inconclusive string `json:"inconclusive,omitempty"`
	// Scheduling, when set, says how late the machine woke a client from its own waits outside
	// every fault on it (scheduling.go): a verdict that hangs on timing weighs less on a machine
	// that busy. Nil when no client woke late.
	Scheduling *Scheduling `json:"scheduling,omitempty"`
	// Lease, when set, is the lease the lock's servers kept, beside the TTL the lock was given
	// and the longest silence a fault caused (lease.go). Nil when the service keeps no lease or
	// the run did not ask.
	Lease   *LeaseKept `json:"lease,omitempty"`
	Summary string     `json:"summary"`
	// Outcome is the verdict in one word (Judge), and Headline in a sentence.
	Outcome  Outcome `json:"outcome"`
	Headline string  `json:"headline"`

	// Server is what the lock servers ran, as the run's start note records it ("etcd 3.4.3 ...");
	// empty when the service did not say.
	Server string `json:"server,omitempty"`
}

// MutualExclusion lists the windows in which two clients both believed they held the lock.
type MutualExclusion struct {
	Holds   bool      `json:"holds"`
	Windows []Overlap `json:"windows"`
	// TotalOverlap is the time during which at least two clients believed they held the lock
	// (overlapping windows of different pairs are counted once).
	TotalOverlap time.Duration `json:"total_overlap_ns"`
	// PromisesRecorded: the history records what the lock promised its clients (promises.go), so
	// every window has a class. Histories written before lockcheck recorded promises have none.
	PromisesRecorded bool `json:"promises_recorded,omitempty"`
	// The windows by class: the lock broke its promise, a fault on its servers explains it, a
	// holder outlived its promise.
	Broken    int `json:"broken_promises,omitempty"`
	Explained int `json:"explained_by_server_faults,omitempty"`
	Outlived  int `json:"outlived_promises,omitempty"`
}

// Worst is the most serious class of its windows; "" when none is classified.
func (m MutualExclusion) Worst() WindowClass {
	var worst WindowClass
	for _, w := range m.Windows {
		if w.Class.Worse(worst) {
			worst = w.Class
		}
	}
	return worst
}

// Overlap is one maximal window in which both clients of a pair believed they held the lock.
type Overlap struct {
	Clients [2]string     `json:"clients"`
	Start   int64         `json:"start_ns"`  // CLOCK_MONOTONIC
	Offset  time.Duration `json:"offset_ns"` // from the run's start
	Length  time.Duration `json:"length_ns"`
	// Class says why it happened, from what the lock promised (promises.go); "" when the history
	// records no promises. Why is the evidence in words.
	Class WindowClass `json:"class,omitempty"`
	Why   string      `json:"why,omitempty"`
}

// RegisterVerdict judges one protected register.
type RegisterVerdict struct {
	// Applicable is false when no critical section touched the register (a lock without tokens
	// leaves the fenced registers alone); every other field is then empty.
	Applicable   bool   `json:"applicable"`
	Linearizable string `json:"linearizable"` // Yes, No, Unknown or NotApplicable

	ReadsAccepted  int `json:"reads_accepted"`
	ReadsRejected  int `json:"reads_rejected"` // refused by fencing: a stale token
	ReadsUnknown   int `json:"reads_unknown"`
	WritesAccepted int `json:"writes_accepted"`
	WritesRejected int `json:"writes_rejected"` // refused by fencing: a stale token
	WritesUnknown  int `json:"writes_unknown"`  // may or may not have landed
	// LegitRejected counts the rejected reads and writes (above) of clients that held the lock
	// by every record (Collateral): fencing refusing a rightful holder, not a stale one.
	LegitRejected int `json:"legit_rejected"`
	// UncertainRejected counts those of clients that held the lock by every record except that a
	// fault acted on them or on a server since they began acquiring (Collateral): neither
	// rightful nor known to be stale.
	UncertainRejected int `json:"uncertain_rejected,omitempty"`

	AckedIncrements int `json:"acked_increments"` // = WritesAccepted: increments the clients were told happened
	// LandedUnknown counts the writes among WritesUnknown that the resource's own log shows it
	// applied: increments that happened though their clients never learned it (a write held back
	// in the network past its client's timeout, say).
	LandedUnknown int    `json:"landed_unknown,omitempty"`
	Final         *int64 `json:"final"` // value read after the clients stopped; nil if never read
	// LostUpdates is the increments known to have been applied (AckedIncrements + LandedUnknown)
	// minus how far the register moved, floored at 0. Unknown writes with no record of landing
	// can raise the final value and hide a loss; they are never counted as one.
	LostUpdates      int  `json:"lost_updates"`
	LostUpdatesKnown bool `json:"lost_updates_known"` // false without a final value
	// FinalBelowInitial is how far the final value is below the value the run started with: the
	// register went backwards (its storage lost data, or something outside the run wrote to it).
	// Lost updates never count more than the acknowledged increments; this says the rest.
	FinalBelowInitial int64 `json:"final_below_initial,omitempty"`

	// Piece is the part of the register's history that was found not linearizable, or that the
	// checker ran out of time on: what porcupine's page for the register shows.
	Piece *Piece `json:"piece,omitempty"`
}

// Piece is a stretch of one register's history between two quiet moments (no critical section
// in progress), checked by porcupine as one.
type Piece struct {
	Start    int64 `json:"start_ns"` // CLOCK_MONOTONIC of its first section's read
	End      int64 `json:"end_ns"`   // of its last section's end
	Sections int   `json:"sections"`
}

// Rejected counts accesses fencing refused.
func (r RegisterVerdict) Rejected() int { return r.ReadsRejected + r.WritesRejected }

// StaleRejected counts accesses fencing refused that were neither those of a legitimate holder nor
// uncertain ones (a fault acted on the holder or a server during its hold): the lock had moved on.
func (r RegisterVerdict) StaleRejected() int {
	return r.Rejected() - r.LegitRejected - r.UncertainRejected
}

// Liveness says how available the lock was.
type Liveness struct {
	Acquisitions    int `json:"acquisitions"`
	AcquireFailures int `json:"acquire_failures"` // fail completions: certainly not taken
	// AcquireUnknown counts acquires that ended with their outcome unknown (info: a timeout, a
	// lost reply). The client does not believe it holds the lock, but the attempt may have taken
	// it: such an acquire is neither a hold nor a failure.
	AcquireUnknown    int           `json:"acquire_unknown"`
	AcquireLatencyP50 time.Duration `json:"acquire_latency_p50_ns"`
	AcquireLatencyP99 time.Duration `json:"acquire_latency_p99_ns"`
	// LongestUnavailable is the longest window in which some live client wanted the lock and no
	// live client believed it held it.
	LongestUnavailable       time.Duration `json:"longest_unavailable_ns"`
	LongestUnavailableOffset time.Duration `json:"longest_unavailable_offset_ns"` // its start, from the run's start
	// Stuck: the last such window was never ended by an acquisition and lasted longer than
	// Options.StuckAfter — the lock was never freed (e.g. its holder died and it has no TTL).
	Stuck    bool          `json:"stuck"`
	StuckFor time.Duration `json:"stuck_for_ns"`
	// StuckUnknown names the clients whose acquire of unknown outcome, made before the lock got
	// stuck and never followed by an acquisition of theirs, may have taken the lock that nobody
	// believed it held: a stuck lock without a dead holder.
	StuckUnknown []string `json:"stuck_unknown_acquires,omitempty"`

	// Clients is each client's share (clients.go): its acquisitions, the longest it was passed
	// over, and whether it was starved: passed over for longer than StarvedAfter, by at least
	// StarvedBy acquisitions of others (more than bad luck explains: luckStreak).
	Clients      []ClientLiveness `json:"clients,omitempty"`
	StarvedAfter time.Duration    `json:"starved_after_ns"`
	StarvedBy    int              `json:"starved_by"`
	// Refused is the time in which someone asked for the lock and nobody held it, in stretches
	// longer than half a second (shorter ones may be hand-overs), from the first acquire to the
	// end of the run, outside faults on servers; RefusedShare its share of that time.
	// BarelyServed: the share is above RefusedLimit (the lock hardly ever served).
	Refused      time.Duration `json:"refused_ns"`
	RefusedShare float64       `json:"refused_share"`
	RefusedLimit float64       `json:"refused_limit"`
	BarelyServed bool          `json:"barely_served,omitempty"`
}
