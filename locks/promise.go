package locks

// promise.go: what a design promises a holder, and for how long. The worker records each yes the
// lock gives (an acquisition, a renewal, a check that asks the servers) with the lease it grants,
// counted from when its request was sent, and each client's design note carries the design's
// rule; the checker reads them to tell a lock that promised itself to two clients at once from a
// holder that outlived its promise (checker/promises.go).

import (
	"fmt"
	"maps"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Forever is a promise that lasts until the holder gives the lock back.
const Forever = time.Duration(history.Forever)

// Promise is a design's promise rule. Its zero value is a lease of the scenario's TTL from each
// acquisition for a design that expires, and the lock until it is given back for one that does
// not, kept by the servers with a small slack.
type Promise struct {
	// Lease is how long a yes lasts from when its request was sent, given the client's Env
	// (Forever for none); nil: the zero value's.
	Lease func(env Env) time.Duration
	// Words say the rule ("the TTL less Redlock's drift (1% + 2 ms)"); "" for the zero value's.
	Words string
	// Slack is how long past a lease's end the servers may still keep it (a ZooKeeper session
	// expires on the tick after its timeout; etcd revokes expired leases in a loop); 0: the
	// default, DefaultSlack.
	Slack time.Duration
	// ClientClocks: expiry is reckoned by the clients' own clocks (a GETSET lock).
	ClientClocks bool
	// Connection: a hold lasts only while the client's connection does (a database session).
	Connection bool
	// RenewalsOnly: an acquisition does not renew the lease its hold lives on (etcd puts the key
	// under a lease that only its keep-alives renew), so it promises nothing that lasts by itself:
	// the lease's renewals do.
	RenewalsOnly bool
	// CheckAsks: the holder's check before an access asks the servers and renews the lease
	// (redsync's Extend), so its yes is a promise; otherwise a check is the client's own
	// judgement (a validity from its clock, a session state its library keeps) and promises
	// nothing.
	CheckAsks bool
}

// DefaultSlack is how long past a lease's end a server may still keep it when a design names no
// slack of its own: a request sent before a client froze can wait that long in a busy server's
// socket before it runs.
const DefaultSlack = 250 * time.Millisecond

// SessionSlack is the slack of locks whose leases are sessions of a coordination service: a
// ZooKeeper session expires on a tick boundary after its timeout, an etcd lease when the
// leader's revocation loop next looks (twice a second) and its revocation is committed.
const SessionSlack = time.Second

// PromiseLength is how long each yes of design d lasts for a client with env.
func (d Design) PromiseLength(env Env) time.Duration {
	switch {
	case d.Promise.Lease != nil:
		return d.Promise.Lease(env)
	case d.Expires && env.TTL > 0:
		return env.TTL
	}
	return Forever
}

// PromiseRule is the rule a client's design note records.
func (d Design) PromiseRule(env Env) history.PromiseRule {
	p := d.Promise
	slack := p.Slack
	if slack == 0 {
		slack = DefaultSlack
	}
	words := p.Words
	if words == "" {
		words = "the lock until it is given back"
		if n := d.PromiseLength(env); n != Forever {
			words = fmt.Sprintf("the lease (%s) from each acquisition", n)
			if d.Renews {
				words += " and each renewal"
			}
		}
	}
	if p.Connection {
		words += ", while the client's connection lives"
	}
	return history.PromiseRule{Words: words, Slack: int64(slack), ClientClocks: p.ClientClocks, Connection: p.Connection}
}

// Renewal is a renewal the lock made on its own — a watchdog's, a session's keep-alive, its
// heartbeat — as the design reports it to Env.Renewed. Times are CLOCK_MONOTONIC (history.Now).
type Renewal struct {
	Asked    int64  // when its request was sent
	Answered int64  // when its answer came
	OK       bool   // the servers said yes: the lease or session lives on
	Unknown  bool   // the answer never came or could not be read (an error)
	Session  string // the lease or session it renewed, when the design has one
	Error    string // why it failed, when it did
	// Lease is how long the renewal lasts, when the servers said (a session's negotiated
	// timeout, a lease's TTL); 0: the design's promise length.
	Lease time.Duration
}

// Renewed reports a renewal to the worker (nothing when the worker asked for none).
func (e Env) Renewed(r Renewal) {
	if e.OnRenewal != nil {
		e.OnRenewal(r)
	}
}

// Promising is a design that knows more of its last acquisition than the worker sees: when the
// request that was answered yes was sent (a blocking acquire waits inside one attempt, and only
// its last request counts), and the lease or session the hold lives on.
type Promising interface {
	Promised() (asked int64, session string)
}

// checkAsker is a lock whose last check may have asked its servers (an external program whose
// valid answer says "renewed": the lease was renewed by that answer).
type checkAsker interface{ CheckAsked() bool }

// CheckAsked reports whether l's last check asked its servers and renewed the lease.
func CheckAsked(l Lock) bool {
	c, ok := l.(checkAsker)
	return ok && c.CheckAsked()
}

// zkPromise is what the ZooKeeper designs promise: a session lives its timeout from every request
// of its that the servers answer, and a node on it is held while it lives.
var zkPromise = Promise{Slack: SessionSlack,
	Words: "the session timeout from each acquisition and each request of the session the servers answered"}

// zkAdapterPromise is what ZooKeeper libraries behind the lock-client protocol promise, as far as
// the history sees it: their adapters report no session requests, so only the acquisitions.
var zkAdapterPromise = Promise{Slack: SessionSlack, Words: "the session timeout from each acquisition"}

// Endpoint parameters of a session lock's service (Env.Params): how long the server lets a
// session stay idle outside a transaction and inside one before it ends it (absent: no limit). A
// session lock's promise lasts that long after its last statement.
const (
	ParamIdleLimit         = "idle_limit"
	ParamIdleInTransaction = "idle_in_transaction_limit"
)

// WithIdleLimits adds to params how long a server lets a session stay idle outside a transaction
// and inside one before it ends the session (0: no limit), as ParamIdleLimit and
// ParamIdleInTransaction say them.
func WithIdleLimits(params map[string]string, session, transaction time.Duration) map[string]string {
	out := maps.Clone(params)
	if out == nil {
		out = map[string]string{}
	}
	if session > 0 {
		out[ParamIdleLimit] = session.String()
	}
	if transaction > 0 {
		out[ParamIdleInTransaction] = transaction.String()
	}
	return out
}

// monotonicNow is CLOCK_MONOTONIC, as the history stamps events.
func monotonicNow() int64 { return history.Now() }

// reportRenewal makes a Renewal of what renewals_zk.go and renewals_etcd.go read (their callback
// takes plain values: the adapters share their code) and reports it through env.
func (e Env) reportRenewal(asked, answered int64, ok bool, session string, lease time.Duration) {
	r := Renewal{Asked: asked, Answered: answered, OK: ok, Session: session, Lease: lease}
	if !ok {
		r.Error = "the servers said the " + session + " has ended"
	}
	e.Renewed(r)
}
