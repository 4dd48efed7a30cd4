//go:build !quickstart

package locks

// etcd and etcd-unchecked: the lock of etcd's own Go client, go.etcd.io/etcd/client/v3 v3.5.35,
// package concurrency, used as it is: a Session (a lease of TTL seconds, kept alive by the
// client library every TTL/3) and a Mutex on /lockcheck/<key>. Lock puts the key <prefix>/<lease
// id> under the session's lease; the key with the lowest create revision holds; a waiter watches
// the key just ahead of it until it is deleted (by Unlock, or with its lease); before returning,
// Lock checks that its own key still exists (v3.5 does; etcd's 3.4 server-side lock did not,
// which Jepsen's etcd 3.4.3 analysis, Kyle Kingsbury, 2020, found).
//
// Why v3.5 of the client against Debian's 3.4.23 server: the v3.5 client line is the one whose
// compatibility with 3.4 servers etcd documents (v3.6 clients assume v3.5+ servers), and v3.5.35
// is its latest patch release the module proxy serves.
//
// The fencing token is the holder's key's create revision — what Mutex.IsOwner() compares against,
// and what Jepsen's analysis advised as a token: etcd's revisions only grow, and the lowest create
// revision holds, so holders' create revisions grow in acquisition order.
//
// The two designs differ only in whether the holder looks at its session:
//   - etcd: a careful user. Session.Done() closes when the lease can no longer be kept alive (the
//     server said it expired, or no keep-alive answer came for a TTL); the holder checks it before
//     each access to the resource (locks.Expiring).
//   - etcd-unchecked: as most code is written: Lock, work, Unlock, never looking at the session.
//
// What we add around the library, and why:
//   - Lock blocks, and on giving up it deletes its key with the client's own context (no
//     deadline: across a partition it waits for the connection to come back). Lock gets a context
//     that ends a little before Acquire's, so that in the ordinary case its clean-up is done and
//     Acquire can tell "busy" from "unknown" before its own deadline. NewSession
//     grants its lease the same way. Acquire runs the attempt in a goroutine and returns when ctx
//     ends; the attempt finishes on its own, and whatever it leaves is undone (a lock it took after
//     all is unlocked, a key it left is deleted). The key is one per session, so the next attempt
//     waits until the previous one has finished.
//   - A session whose Done channel closed is replaced at the next Acquire (its lease is gone, and
//     a Lock on it would fail for ever).
//   - Release reports ErrNotHeld when the session had ended by then: the key may have gone with
//     the lease, and someone else may hold.
//
// How they fail: a pause or partition longer than the TTL lets the lease expire and another client
// take the lock, while the holder goes on (K2). The unchecked holder never notices and writes; the
// checked one notices only when the client library has closed Done — up to a second after its own
// deadline (the library looks once a second), or when a keep-alive answer says the lease is gone —
// and a pause between its check and its write (K3) is not caught at all. A keep-alive answer that
// arrived while the client was frozen is read on waking and taken for a renewal: Done then stays
// open until the next keep-alive, about a second (debate/k2-etcd-new-session). Fencing by create
// revision rescues both.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/lockcheck/lockcheck/history"
)

// Etcd is the lock service the etcd designs run on (package services/etcd).
const Etcd = "etcd"

func init() {
	common := Design{
		Source: "go.etcd.io/etcd/client/v3 v3.5.35, package concurrency (Session, Mutex), as etcd's documentation shows it; Jepsen's etcd 3.4.3 " +
			"analysis (Kyle Kingsbury, 2020) tested etcd's lock",
		Token:   "create revision of the holder's lock key (Mutex.IsOwner)",
		Nodes:   3,
		Expires: true,
		Renews:  true, // the library keeps the lease alive
		Queued:  true, // each waiter's key lives on its own lease
		Fair:    true, // the lowest create revision holds; Lock waits for every key created before its own
		Service: Etcd,
		Promise: Promise{Slack: SessionSlack, RenewalsOnly: true, Words: "the lease's TTL from each keep-alive of its lease"},
		// Mutex.Lock waits for the keys ahead of its own to go (a watch).
		Blocking: "Mutex.Lock watches the key ahead of its own until it is deleted (keys are served in revision order)",
		Protects: "crashed or cut-off holders (the key goes with the lease), herd effects (a waiter watches only the key ahead of it), " +
			"leader changes (a new leader extends every lease), a waiter whose own session expired while it waited (Lock checks its key before returning)",
	}
	checked := common
	checked.Name = "etcd"
	checked.Summary = "etcd client v3.5 concurrency.Session + Mutex as they are (lease kept alive by the library, oldest key holds); the " +
		"holder checks Session.Done() before each access"
	checked.FailureModes = []string{
		"a pause longer than the TTL: the lease expires and another client holds; on resuming the holder believes it still holds until the " +
			"library closes Done (K2); create-revision fencing rescues",
		"Done closes up to a second after the library's own deadline (it looks once a second), and that deadline counts from the last keep-alive " +
			"answer: a holder cut off can still pass its check after the server revoked its lease",
		"a fresh session is taken to be alive for 5 s before its first keep-alive answer, whatever its TTL: after a leader crash a holder passed " +
			"its check with its lease already gone (debate/k11-leader-crash-etcd)",
		"a pause between the check and the write (K3): nothing can catch it; create-revision fencing rescues",
	}
	checked.Scenarios = []string{"no-faults-etcd", "debate/k2-etcd", "debate/k2-etcd-new-session", "debate/k3-etcd",
		"debate/k11-leader-isolated-etcd", "debate/k11-leader-crash-etcd", "debate/waiter-session-expires-etcd"}
	checked.New = func(env Env) (Lock, error) {
		l, err := newEtcdLock(env)
		if err != nil {
			return nil, err
		}
		return etcdChecked{l}, nil
	}
	Register(checked)

	unchecked := common
	unchecked.Name = "etcd-unchecked"
	unchecked.Summary = "etcd client v3.5 concurrency.Session + Mutex as most code uses them: Lock, work, Unlock, never looking at the session"
	unchecked.FailureModes = []string{
		"a pause or partition longer than the TTL: the lease expires, another client holds, and the holder writes anyway (K2, as Jepsen's etcd " +
			"3.4.3 analysis found); create-revision fencing rescues",
		"a pause anywhere in the critical section longer than the TTL (K3 too): it never checks",
	}
	unchecked.Scenarios = []string{"no-faults-etcd", "debate/k2-etcd-unchecked", "jepsen/random-pauses-etcd-unchecked"}
	unchecked.New = func(env Env) (Lock, error) { return newEtcdLock(env) }
	Register(unchecked)
}

// etcdLock is one client's handle on an etcd mutex.
type etcdLock struct {
	env    Env
	ttl    int // seconds
	cli    *clientv3.Client
	prefix string

	mu       sync.Mutex
	sess     *concurrency.Session // the current session, nil until the first attempt
	held     *concurrency.Mutex
	heldSess *concurrency.Session
	attempt  chan struct{} // closed when the last attempt has finished, cleanup included
	pending  []string      // keys of ours an attempt or a release may have left behind
}

func newEtcdLock(env Env) (*etcdLock, error) {
	if env.TTL < time.Second || env.TTL%time.Second != 0 {
		return nil, fmt.Errorf("etcd: a lease lasts whole seconds; ttl %s is not", env.TTL)
	}
	if len(env.Nodes) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: env.Nodes, Logger: etcdLogger(), DialOptions: etcdDialOptions(env)})
	if err != nil {
		return nil, fmt.Errorf("etcd: client: %w", err)
	}
	return &etcdLock{env: env, ttl: int(env.TTL / time.Second), cli: cli, prefix: etcdMutexPrefix(env.Key)}, nil
}

// etcdDialOptions report the lease's keep-alives as renewals (renewals_etcd.go).
func etcdDialOptions(env Env) []grpc.DialOption {
	return []grpc.DialOption{grpc.WithChainStreamInterceptor(etcdRenewals(env.reportRenewal))}
}

// Promised names the lease the hold lives on.
func (l *etcdLock) Promised() (int64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.heldSess == nil {
		return 0, ""
	}
	return 0, etcdLeaseName(int64(l.heldSess.Lease()))
}

// etcdMutexPrefix is the prefix the Mutex is made with; it keeps its keys under prefix + "/".
func etcdMutexPrefix(key string) string { return "/lockcheck/" + key }

// EtcdLockPrefix is the prefix under which the etcd designs keep every key of the lock on key: what
// a run removes from a cluster that outlives it.
func EtcdLockPrefix(key string) string { return etcdMutexPrefix(key) + "/" }

// etcdLogger keeps the client library's warnings and errors (in the worker's log), not its chatter.
func etcdLogger() *zap.Logger {
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	cfg.Sampling = nil
	cfg.OutputPaths, cfg.ErrorOutputPaths = []string{"stderr"}, []string{"stderr"}
	lg, err := cfg.Build()
	if err != nil {
		return zap.NewNop()
	}
	return lg
}

// etcdAttempt is what one attempt came to.
type etcdAttempt struct {
	s   *concurrency.Session
	m   *concurrency.Mutex
	err error
}

func (l *etcdLock) Acquire(ctx context.Context) (*int64, error) {
	l.mu.Lock()
	held, prev := l.held != nil, l.attempt
	l.mu.Unlock()
	if held {
		return nil, errors.New("etcd: this client already holds the lock")
	}
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			return nil, fmt.Errorf("etcd: an earlier attempt is still finishing: %w", ctx.Err())
		}
	}
	if err := l.flushPending(ctx); err != nil {
		return nil, err
	}

	done := make(chan struct{})
	l.mu.Lock()
	l.attempt = done
	l.mu.Unlock()
	r, ok := etcdAbandonable(ctx, l.env.Timeout, done, l.try, l.undo)
	if !ok {
		return nil, fmt.Errorf("etcd: no answer before %w (the attempt is abandoned and undone when it ends)", ctx.Err())
	}
	if r.err != nil {
		return nil, l.failed(ctx, r)
	}
	token := createRevision(r.m)
	l.mu.Lock()
	l.held, l.heldSess = r.m, r.s
	l.mu.Unlock()
	return &token, nil
}

// etcdLockContext is ctx ending a little earlier, so that an attempt that gives up waiting has time
// to clean up and say so before ctx ends: one command's timeout, or a quarter of what is left.
func etcdLockContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, d.Add(-min(timeout, time.Until(d)/4)))
}

// etcdAbandonable runs one attempt in its own goroutine, which closes done when it ends, under a
// context ending a little before ctx (etcdLockContext), and returns its result. When ctx ends
// first it returns ok false and abandons the attempt: whichever of the two comes second decides,
// and an abandoned attempt hands what it got to undo when it finishes.
func etcdAbandonable[T any](ctx context.Context, timeout time.Duration, done chan struct{},
	try func(context.Context) T, undo func(T)) (result T, ok bool) {
	var (
		mu        sync.Mutex
		got       *T
		abandoned bool
	)
	attemptCtx, cancel := etcdLockContext(ctx, timeout)
	go func() {
		defer close(done)
		defer cancel()
		r := try(attemptCtx)
		mu.Lock()
		if abandoned {
			mu.Unlock()
			undo(r)
			return
		}
		got = &r
		mu.Unlock()
	}()
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		if got == nil {
			abandoned = true
			mu.Unlock()
			return result, false
		}
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	return *got, true
}

// try is one attempt, as a user writes it: a session (the current one while it lives), then Lock.
func (l *etcdLock) try(ctx context.Context) etcdAttempt {
	s, err := l.session()
	if err != nil {
		return etcdAttempt{err: fmt.Errorf("etcd: NewSession: %w", err)}
	}
	m := concurrency.NewMutex(s, l.prefix)
	return etcdAttempt{s: s, m: m, err: m.Lock(ctx)}
}

// session returns the current session, or a new one if there is none or its Done has closed.
func (l *etcdLock) session() (*concurrency.Session, error) {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	if s != nil && !etcdSessionEnded(s) {
		return s, nil
	}
	if s != nil {
		go func() { _ = s.Close() }() // revoke what may be left of the lease; it is gone anyway
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithTTL(l.ttl))
	if err != nil {
		return nil, err
	}
	go etcdTraceSession(l.cli, s)
	l.mu.Lock()
	l.sess = s
	l.mu.Unlock()
	return s, nil
}

// etcdTraceSession writes to the client's log each keep-alive answer the library takes for the
// session's lease, and the moment it closes Done, with CLOCK_MONOTONIC times comparable to the
// history's: when the library notices a lease is gone (or takes a late answer for a renewal) is
// what decides whether a holder that checks Done stops in time, and no history event shows it.
// It listens beside the session (the library hands every answer to each listener of the lease).
func etcdTraceSession(cli *clientv3.Client, s *concurrency.Session) {
	answers, err := cli.KeepAlive(context.Background(), s.Lease())
	if err != nil {
		return
	}
	for a := range answers {
		fmt.Fprintf(os.Stderr, "etcd session %x: keep-alive answer, TTL %d s (t=%d)\n", int64(s.Lease()), a.TTL, history.Now())
	}
	<-s.Done()
	fmt.Fprintf(os.Stderr, "etcd session %x: Done closed (t=%d)\n", int64(s.Lease()), history.Now())
}

func etcdSessionEnded(s *concurrency.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// Lock's key after its own Unlock ran (it resets the key to this).
const etcdNoKey = "\x00"

// failed says what an attempt that returned an error came to, deleting a key it may have left.
func (l *etcdLock) failed(ctx context.Context, r etcdAttempt) error {
	switch {
	case r.m == nil:
		return r.err
	case r.m.Key() == etcdNoKey:
		// Lock waited behind other clients' keys until ctx ended, then deleted its own.
		return fmt.Errorf("%w (gave up waiting: %v)", ErrBusy, r.err)
	case errors.Is(r.err, concurrency.ErrSessionExpired):
		return fmt.Errorf("etcd: Lock: %w (the key went with the lease)", r.err)
	}
	l.deleteKey(ctx, r.m.Key())
	return fmt.Errorf("etcd: Lock: %w", r.err)
}

// undo gives back what an abandoned attempt came to.
func (l *etcdLock) undo(r etcdAttempt) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*l.env.Timeout)
	defer cancel()
	switch {
	case r.m == nil:
	case r.err == nil:
		key := r.m.Key()
		if err := r.m.Unlock(ctx); err != nil {
			l.addPending(key)
		}
	case r.m.Key() != etcdNoKey:
		l.deleteKey(ctx, r.m.Key())
	}
}

// deleteKey deletes a key of ours ("" and Unlock's marker are none), or remembers it.
func (l *etcdLock) deleteKey(ctx context.Context, key string) {
	if key == "" || key == etcdNoKey {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 4*l.env.Timeout)
	defer cancel()
	if _, err := l.cli.Delete(ctx, key); err != nil {
		l.addPending(key)
	}
}

func (l *etcdLock) addPending(key string) {
	l.mu.Lock()
	l.pending = append(l.pending, key)
	l.mu.Unlock()
}

// flushPending deletes keys left behind, before a new attempt queues behind them.
func (l *etcdLock) flushPending(ctx context.Context) error {
	l.mu.Lock()
	todo := l.pending
	l.pending = nil
	l.mu.Unlock()
	for i, key := range todo {
		if _, err := l.cli.Delete(ctx, key); err != nil {
			l.mu.Lock()
			l.pending = append(todo[i:], l.pending...)
			l.mu.Unlock()
			return fmt.Errorf("etcd: could not delete a key left by an earlier attempt: %w", err)
		}
	}
	return nil
}

// createRevision is the create revision of the key m holds: the value m.IsOwner() compares with.
func createRevision(m *concurrency.Mutex) int64 {
	c := pb.Compare(m.IsOwner())
	return c.TargetUnion.(*pb.Compare_CreateRevision).CreateRevision
}

func (l *etcdLock) Release(ctx context.Context) error {
	l.mu.Lock()
	m, s := l.held, l.heldSess
	l.held, l.heldSess = nil, nil
	l.mu.Unlock()
	if m == nil {
		return ErrNotHeld
	}
	ended := etcdSessionEnded(s)
	key := m.Key()
	if err := m.Unlock(ctx); err != nil {
		l.addPending(key) // deleted before the next attempt if still there
		return fmt.Errorf("etcd: Unlock: %w", err)
	}
	if ended {
		return fmt.Errorf("%w: the session had ended (its lease expired or could not be renewed), so the key may have gone with it", ErrNotHeld)
	}
	return nil
}

func (l *etcdLock) Close() error {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	return etcdClose(l.cli, s, 4*l.env.Timeout)
}

// etcdClose closes a client, revoking its session's lease first (when it has one) so that its
// key goes at once rather than a TTL later; the session stops keeping the lease alive.
func etcdClose(cli *clientv3.Client, s *concurrency.Session, timeout time.Duration) error {
	if s != nil {
		s.Orphan()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, _ = cli.Revoke(ctx, s.Lease())
		cancel()
	}
	return cli.Close()
}

// etcdChecked is the careful user's lock: valid while the session lives.
type etcdChecked struct{ *etcdLock }

// ValidUntil is the zero time (no known end) while the session holding the lock lives, and a
// time long past once its Done channel has closed.
func (c etcdChecked) ValidUntil() time.Time {
	c.mu.Lock()
	s := c.heldSess
	c.mu.Unlock()
	if s == nil || !etcdSessionEnded(s) {
		return time.Time{}
	}
	return time.Unix(0, 0)
}
