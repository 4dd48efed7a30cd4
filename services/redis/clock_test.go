package redis_test

// Lock nodes' clocks (K7, K8): they run under libfaketime, and a clock set ahead, stepped back,
// strobed or run at another rate shows in Redis's own expiry. The resource's server has no clock
// to set; without libfaketime the nodes still start, and say what to install.

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/faketime"
	"github.com/lockcheck/lockcheck/services/redis"
)

// requireFaketime fails the test when lock nodes cannot run under libfaketime.
func requireFaketime(t *testing.T) {
	t.Helper()
	if err := faketime.Check(); err != nil {
		t.Fatal(err)
	}
}

// pickup is how long a lock node may take to see a new clock setting: libfaketime re-reads its
// file at most once a second, then Redis's own time cache and expiry cycle (hz 10).
const pickup = 2500 * time.Millisecond

// waitSkew polls n's clock until it is within tol of want and returns how long that took.
func waitSkew(t *testing.T, n providers.Node, want, tol, within time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	var last time.Duration
	var err error
	for time.Since(began) < within {
		if last, err = redis.ClockSkew(t.Context(), addr(n)); err == nil && (last-want).Abs() <= tol {
			return time.Since(began)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: clock skew %v (err %v) after %v, want %v ± %v", n.Name(), last, err, within, want, tol)
	return 0
}

func skewOf(t *testing.T, n providers.Node) time.Duration {
	t.Helper()
	d, err := redis.ClockSkew(t.Context(), addr(n))
	mustOK(t, err)
	return d
}

// waitGone polls GET key until it answers nil and returns how long that took.
func waitGone(t *testing.T, rc *goredis.Client, key string, within time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	for time.Since(began) < within {
		err := rc.Get(t.Context(), key).Err()
		if errors.Is(err, goredis.Nil) {
			return time.Since(began)
		}
		mustOK(t, err)
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s still there after %v", key, within)
	return 0
}

// K7: a lock node's clock set ahead expires keys early; SetClock(0, 1) gives normal expiry back.
func TestSetClockAheadExpiresKeys(t *testing.T) {
	requireFaketime(t)
	n1 := node(t, lockNodes(t, 1), "n1")
	rc := client(t, addr(n1))
	ctx := t.Context()
	if d := skewOf(t, n1); d.Abs() > 50*time.Millisecond {
		t.Fatalf("a fresh node's clock is %v off", d)
	}
	var took []string
	for i := range 4 {
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond) // any phase of libfaketime's second
		mustOK(t, rc.Set(ctx, "k", "v", 5*time.Second).Err())
		mustOK(t, rc.Set(ctx, "long", "v", 20*time.Second).Err())
		began := time.Now()
		mustOK(t, n1.SetClock(10*time.Second, 1))
		gone := waitGone(t, rc, "k", pickup)
		took = append(took, gone.Round(time.Millisecond).String())
		if gone > 1500*time.Millisecond {
			t.Errorf("trial %d: a PX 5000 key took %v to expire after SetClock(+10s)", i, gone)
		}
		// Redis's expiry works from its wall clock: the remaining TTL dropped by 10 s.
		pttl, err := rc.PTTL(ctx, "long").Result()
		mustOK(t, err)
		if elapsed := time.Since(began); pttl > 10*time.Second-elapsed+100*time.Millisecond || pttl < 9*time.Second-elapsed {
			t.Errorf("trial %d: PTTL of a PX 20000 key %v after +10 s (%v after SET)", i, pttl, elapsed)
		}
		if d := skewOf(t, n1); (d - 10*time.Second).Abs() > 50*time.Millisecond {
			t.Errorf("trial %d: skew %v, want 10s", i, d)
		}
		mustOK(t, n1.SetClock(0, 1))
		waitSkew(t, n1, 0, 50*time.Millisecond, pickup)
	}
	t.Logf("a PX 5000 key expired %s after SetClock(+10s)", strings.Join(took, ", "))

	// Normal expiry again: a PX 2000 key lives about 2 s.
	mustOK(t, rc.Set(ctx, "k2", "v", 2*time.Second).Err())
	life := waitGone(t, rc, "k2", 4*time.Second)
	t.Logf("after SetClock(0, 1), a PX 2000 key lived %v", life)
	if life < 1900*time.Millisecond || life > 2300*time.Millisecond {
		t.Fatalf("a PX 2000 key lived %v after the clock was reset", life)
	}
}

// A step back (K7) lengthens existing leases by the step but must not stall the expiry of new
// keys: without FAKETIME_DONT_FAKE_MONOTONIC Redis's active expiry cycle stops after it.
func TestSetClockBackwardStepKeepsExpiring(t *testing.T) {
	requireFaketime(t)
	n1 := node(t, lockNodes(t, 1), "n1")
	rc := client(t, addr(n1))
	ctx := t.Context()
	mustOK(t, rc.Set(ctx, "old", "v", 3*time.Second).Err())
	mustOK(t, n1.SetClock(-10*time.Second, 1))
	t.Logf("step back picked up after %v", waitSkew(t, n1, -10*time.Second, 50*time.Millisecond, pickup))
	pttl, err := rc.PTTL(ctx, "old").Result()
	mustOK(t, err)
	if pttl < 10*time.Second {
		t.Errorf("PTTL of a PX 3000 key after a 10 s step back: %v, want above 10s", pttl)
	}
	t.Logf("a PX 3000 key has %v left after the step back", pttl)

	// Active expiry (keys nobody reads again) keeps working.
	expired := func() int {
		info, err := rc.Info(ctx, "stats").Result()
		mustOK(t, err)
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "expired_keys:"); ok {
				n, err := strconv.Atoi(v)
				mustOK(t, err)
				return n
			}
		}
		t.Fatal("no expired_keys in INFO stats")
		return 0
	}
	before := expired()
	for i := range 20 {
		mustOK(t, rc.Set(ctx, "new"+strconv.Itoa(i), "v", 300*time.Millisecond).Err())
	}
	began := time.Now()
	for expired() < before+20 {
		if time.Since(began) > 2*time.Second {
			t.Fatalf("active expiry stalled after a step back: %d of 20 PX 300 keys expired in %v", expired()-before, time.Since(began))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("20 PX 300 keys expired by the active cycle within %v of being set", time.Since(began))
	mustOK(t, rc.Set(ctx, "k", "v", time.Second).Err())
	life := waitGone(t, rc, "k", 3*time.Second)
	if life < 900*time.Millisecond || life > 1300*time.Millisecond {
		t.Fatalf("a PX 1000 key lived %v after the step back", life)
	}
	mustOK(t, n1.SetClock(0, 1))
	waitSkew(t, n1, 0, 50*time.Millisecond, pickup)
}

// Clock strobe (K8-ish): flipping between +5 s and the true clock leaves the server serving.
func TestSetClockStrobe(t *testing.T) {
	requireFaketime(t)
	n1 := node(t, lockNodes(t, 1), "n1")
	before := pid(n1)
	rc := client(t, addr(n1))
	ctx := t.Context()
	seen := map[bool]int{}
	for i := range 8 {
		mustOK(t, n1.SetClock(time.Duration(5*((i+1)%2))*time.Second, 1))
		deadline := time.Now().Add(600 * time.Millisecond)
		for time.Now().Before(deadline) {
			mustOK(t, rc.Set(ctx, "k", strconv.Itoa(i), time.Minute).Err())
			if v, err := rc.Get(ctx, "k").Result(); err != nil || v != strconv.Itoa(i) {
				t.Fatalf("flip %d: GET k = %q, %v", i, v, err)
			}
			seen[skewOf(t, n1) > 2500*time.Millisecond]++
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("during the strobe: %d samples at +5s, %d at the true clock", seen[true], seen[false])
	if seen[true] == 0 {
		t.Error("the server never showed +5 s during the strobe")
	}
	mustOK(t, n1.SetClock(0, 1))
	waitSkew(t, n1, 0, 50*time.Millisecond, pickup)
	if pid(n1) != before {
		t.Fatal("the server was restarted")
	}
	mustOK(t, rc.Set(ctx, "k2", "v", time.Second).Err())
	if life := waitGone(t, rc, "k2", 3*time.Second); life < 900*time.Millisecond || life > 1300*time.Millisecond {
		t.Fatalf("a PX 1000 key lived %v after the strobe", life)
	}
}

// A rate: the clock runs at it from SetClock on, without a jump (libfaketime scales from the
// process's start; SetClock compensates), and keeps running across a Restart.
func TestSetClockRateAndRestart(t *testing.T) {
	requireFaketime(t)
	// At rate R libfaketime counts from when it initialised in the process, which the harness
	// can only place at the start it asked for: the clock is off by times the lag between
	// the two, at most the start's length (measured here: up to 65 ms on a loaded machine).
	starting := time.Now()
	n1 := node(t, lockNodes(t, 1), "n1")
	startup := time.Since(starting)
	tol := 50*time.Millisecond + startup
	// A process age a naive "+0 x2" would show as a jump well past that tolerance.
	time.Sleep(1500*time.Millisecond + 2*startup)

	anchor := time.Now()
	mustOK(t, n1.SetClock(time.Second, 2))
	// The clock reads real + 1 s + (t - anchor): poll until it does.
	began := time.Now()
	for {
		d := skewOf(t, n1)
		if want := time.Second + time.Since(anchor); (d - want).Abs() < tol {
			break
		}
		if time.Since(began) > pickup {
			t.Fatalf("skew %v, want 1s + %v ± %v (start took %v)", d, time.Since(anchor), tol, startup.Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t1, s1 := time.Now(), skewOf(t, n1)
	time.Sleep(time.Second)
	t2, s2 := time.Now(), skewOf(t, n1)
	slope := float64(s2-s1) / float64(t2.Sub(t1))
	t.Logf("at rate 2 the skew grows %.3f s per s; %v after SetClock it is %v", slope, t2.Sub(anchor).Round(time.Millisecond), s2)
	if math.Abs(slope-1) > 0.05 {
		t.Fatalf("skew grows %.3f s per s at rate 2, want 1", slope)
	}

	// Restart: the new process reads the same file, rewritten so the clock carries on, off by the
	// same lag as above, now bounded by the Restart call's length.
	kill(t, n1)
	restarting := time.Now()
	mustOK(t, n1.Restart(t.Context()))
	startup = time.Since(restarting)
	d := skewOf(t, n1)
	want := time.Second + time.Since(anchor)
	t.Logf("after Restart (%v): skew %v, want %v", startup.Round(time.Millisecond), d, want)
	if (d - want).Abs() > 50*time.Millisecond+startup {
		t.Fatalf("after Restart (%v): skew %v, want %v", startup.Round(time.Millisecond), d, want)
	}

	// Set while the node is down: the restarted process starts with it.
	kill(t, n1)
	mustOK(t, n1.SetClock(-7*time.Second, 1))
	mustOK(t, n1.Restart(t.Context()))
	if d := skewOf(t, n1); (d + 7*time.Second).Abs() > 50*time.Millisecond {
		t.Fatalf("set while down: skew %v after Restart, want -7s", d)
	}
	mustOK(t, n1.SetClock(0, 0))
	waitSkew(t, n1, 0, 50*time.Millisecond, pickup)
	// Back to the true clock, and a fresh process keeps it.
	mustOK(t, n1.Restart(t.Context()))
	if d := skewOf(t, n1); d.Abs() > 50*time.Millisecond {
		t.Fatalf("after reset and Restart: skew %v", d)
	}
}

// Lock nodes run under libfaketime with their own timestamp file; the resource, started with
// clock=false, does not, and refuses SetClock with providers.ErrNoClock.
func TestOnlyLockNodesHaveClocks(t *testing.T) {
	requireFaketime(t)
	topo := lockNodes(t, 2)
	n1, n2 := node(t, topo, "n1"), node(t, topo, "n2")
	res := startResource(t)
	for _, n := range []providers.Node{n1, n2, res} {
		maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid(n)) + "/maps")
		mustOK(t, err)
		// Redis rewrites its process title over /proc/PID/environ: check what it was given.
		environ := "\x00" + strings.Join(process(t, n).Cmd().Env, "\x00") + "\x00"
		loaded := strings.Contains(string(maps), "libfaketime")
		file := filepath.Join(n.Dir(), faketime.FileName)
		hasEnv := strings.Contains(environ, "\x00FAKETIME_TIMESTAMP_FILE="+file+"\x00")
		if n == res {
			if loaded || strings.Contains(environ, "FAKETIME") {
				t.Errorf("resource: libfaketime loaded %v, environment %q", loaded, environ)
			}
			if err := res.SetClock(time.Second, 1); !errors.Is(err, providers.ErrNoClock) {
				t.Errorf("SetClock on the resource = %v, want ErrNoClock", err)
			}
			if _, err := os.Stat(file); err == nil {
				t.Error("the resource has a timestamp file")
			}
			continue
		}
		if !loaded || !hasEnv {
			t.Errorf("%s: libfaketime loaded %v, FAKETIME_TIMESTAMP_FILE=%s %v", n.Name(), loaded, file, hasEnv)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != "+0\n" {
			t.Errorf("%s: %s holds %q (%v), want +0", n.Name(), file, b, err)
		}
	}
	// Each node has its own clock.
	mustOK(t, n1.SetClock(5*time.Second, 1))
	waitSkew(t, n1, 5*time.Second, 50*time.Millisecond, pickup)
	if d := skewOf(t, n2); d.Abs() > 50*time.Millisecond {
		t.Errorf("n2's clock moved with n1's: %v", d)
	}
	if d := skewOf(t, res); d.Abs() > 50*time.Millisecond {
		t.Errorf("the resource's clock moved with n1's: %v", d)
	}
}

// Without libfaketime the nodes still start, with the true clock, and SetClock names the package.
func TestSetClockWithoutFaketime(t *testing.T) {
	saved := faketime.Lib
	faketime.Lib = filepath.Join(t.TempDir(), "libfaketime.so.1")
	t.Cleanup(func() { faketime.Lib = saved })
	err := faketime.Check()
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y libfaketime") {
		t.Fatalf("faketime.Check = %v", err)
	}
	n1 := node(t, lockNodes(t, 1), "n1")
	mustOK(t, ping(t, addr(n1)))
	err = n1.SetClock(time.Second, 1)
	if !errors.Is(err, providers.ErrNoClock) || !strings.Contains(err.Error(), "Debian package libfaketime") {
		t.Fatalf("SetClock without libfaketime = %v", err)
	}
	t.Log(err)
	if _, err := os.Stat(filepath.Join(n1.Dir(), faketime.FileName)); err == nil {
		t.Error("a node without libfaketime has a timestamp file")
	}
}
