package lockchecktest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/lockchecktest"
)

// fencedLease is a project's own lock, as a project would write it: SET NX PX of a random value,
// a fencing token from INCR, release by compare-and-delete. It lives outside lockcheck and uses
// only lockchecktest's public API.
type fencedLease struct {
	env   lockchecktest.Env
	rdb   *redis.Client
	value string
}

func newFencedLease(env lockchecktest.Env) (lockchecktest.Lock, error) {
	rdb := redis.NewClient(&redis.Options{Addr: env.Nodes[0], DialTimeout: env.Timeout,
		ReadTimeout: -1, WriteTimeout: -1, ContextTimeoutEnabled: true, MaxRetries: -1}) // bounded by the caller's context
	return &fencedLease{env: env, rdb: rdb}, nil
}

func (l *fencedLease) Acquire(ctx context.Context) (*int64, error) {
	b := make([]byte, 16)
	rand.Read(b)
	value := hex.EncodeToString(b)
	ok, err := l.rdb.SetNX(ctx, l.env.Key, value, l.env.TTL).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, lockchecktest.ErrBusy
	}
	l.value = value
	token, err := l.rdb.Incr(ctx, l.env.Key+":token").Result()
	return &token, err
}

var compareAndDelete = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

func (l *fencedLease) Release(ctx context.Context) error {
	n, err := compareAndDelete.Run(ctx, l.rdb, []string{l.env.Key}, l.value).Int()
	if err == nil && n == 0 {
		return lockchecktest.ErrNotHeld
	}
	return err
}

func (l *fencedLease) Close() error { return l.rdb.Close() }

// Registered in every process of the test binary: its clients are this binary, started again.
func init() {
	lockchecktest.Register(lockchecktest.Design{Name: "fenced-lease", New: newFencedLease, Token: "INCR", Expires: true})
}

func TestMain(m *testing.M) { lockchecktest.Main(m) }

// A GC pause longer than the lease right after acquiring (Kleppmann's K2): two clients believe
// they hold the lock, and the paused one's late write would clobber the data, but the resource's
// fencing-token checks refuse it: rescued. In a test, lockchecktest.Run(t, ...) also reports a
// test error when the outcome is not Check.Expect.
func ExampleVerify() {
	dir, _ := os.MkdirTemp("", "lockcheck-example-")
	defer os.RemoveAll(dir)
	v, err := lockchecktest.Verify(context.Background(), lockchecktest.Check{
		Lock: "fenced-lease", Scenario: "pause-after-acquire", Results: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Outcome)
	// Output: rescued
}
