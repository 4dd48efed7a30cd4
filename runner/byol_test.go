package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Bring your own lock: lock libraries of other languages run through the lock-client protocol
// (adapters/), end to end against real servers.

// byolFast are the adapter scenarios `make test` runs: one K2 and the control per adapter (a JVM
// or a Python start per client adds up); `make byol` runs every file in scenarios/byol/, and so
// does this test with LOCKCHECK_ALL_BYOL=1.
var byolFast = []string{
	"no-faults-redis-py", "k2-redis-py",
	"no-faults-kazoo", "k2-kazoo",
	"no-faults-curator", "k2-curator",
}

func TestAdapterScenariosReachTheirExpectedVerdicts(t *testing.T) {
	files := make([]string, len(byolFast))
	for i, name := range byolFast {
		files[i] = "../scenarios/byol/" + name + ".yaml"
	}
	if os.Getenv("LOCKCHECK_ALL_BYOL") == "1" {
		files, _ = filepath.Glob("../scenarios/byol/*.yaml")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			sc, err := scenarios.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			o, marker := byolOptions(t)
			res := runOnce(t, sc, o)
			if !res.Matches {
				t.Fatalf("verdict does not match expect: %v\n%s\nrun folder: %s", res.Mismatches, res.Verdict.Summary, res.Dir)
			}
			assertRunFolder(t, sc, res.Dir)
			assertNothingLeft(t, res.Dir, marker)
		})
	}
}

// runOnce runs sc; a run whose verdict misses its expect fails the test where the caller says so.
func runOnce(t *testing.T, sc *scenarios.Scenario, o Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), sc, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// byolOptions are testOptions with a marker in the workers' environment, which their lock
// programs inherit: how assertNothingLeft finds this test's programs and nobody else's.
func byolOptions(t *testing.T) (Options, string) {
	marker := fmt.Sprintf("LOCKCHECK_BYOL_TEST=%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
	o := testOptions(t)
	o.WorkerEnv = append(o.WorkerEnv, marker)
	return o, marker
}

// assertNothingLeft checks that no process of the run is still alive: servers (their command
// lines name the run folder), workers and lock programs (their environment holds the marker).
func assertNothingLeft(t *testing.T, dir, marker string) {
	t.Helper()
	left := func() []int {
		pids := proc.Mentioning(dir)
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !strings.Contains(string(env), marker+"\x00") {
				continue
			}
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				if st, err := proc.StateOf(pid); err == nil && st != 'Z' {
					pids = append(pids, pid)
				}
			}
		}
		return pids
	}
	if len(left()) > 0 {
		time.Sleep(time.Second) // kills are sent; give the reapers a moment
		if pids := left(); len(pids) > 0 {
			t.Errorf("processes of the run still running after it: %v", pids)
		}
	}
}

// withLock returns scenario file's text with its lock replaced by lock (a YAML value).
func withLock(t *testing.T, file, name, lock string) *scenarios.Scenario {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?m)^lock: .*$`).ReplaceAllString(string(src), "lock: "+lock)
	text = regexp.MustCompile(`(?m)^name: .*$`).ReplaceAllString(text, "name: "+name)
	sc, err := scenarios.Parse(filepath.Join(filepath.Dir(file), name+".yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// An adapter that releases without checking that the lock is still its own (redis-py's lock with
// a plain DEL for release) is flagged by the very scenarios redis-py's own adapter passes: the
// paused holder's stale release deletes the next holder's key, and clients that never paused
// overlap (expect.overlaps_only_with). It needs someone to hold the lock at the instant of that
// release, which was so in 7 of 8 runs of each scenario (the gaps between holders make the rest);
// up to four runs are made, and one flag suffices. A correct adapter is never flagged (the
// scenarios above pass).
func TestBrokenAdapterIsFlaggedByTheSameScenarios(t *testing.T) {
	broken, err := filepath.Abs("../adapters/testdata/redis_py_release_without_owner_check.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"k2-redis-py", "k3-redis-py"} {
		t.Run(name, func(t *testing.T) {
			sc := withLock(t, "../scenarios/byol/"+name+".yaml", name+"-release-without-owner-check",
				fmt.Sprintf("{command: [/usr/bin/python3, %s], service: redis, nodes: 1, token: none}", broken))
			for run := 1; ; run++ {
				o, marker := byolOptions(t)
				res, err := Run(context.Background(), sc, o)
				if err != nil {
					t.Fatal(err)
				}
				assertNothingLeft(t, res.Dir, marker)
				flagged := false
				for _, m := range res.Mismatches {
					flagged = flagged || m.Field == "overlaps_only_with"
				}
				if flagged {
					t.Logf("flagged in run %d: %v", run, res.Mismatches)
					return
				}
				if run == 4 {
					t.Fatalf("the broken adapter passed %s in %d runs; last:\n%s\nrun folder: %s", name, run, res.Verdict.Summary, res.Dir)
				}
			}
		})
	}
}

// The protocol document's example adapter (SET NX PX, an INCR token, compare-and-delete, in
// Python) reaches the verdict lockcheck's own set-nx-px reaches on K2.
func TestExampleAdapterReachesSetNxPxVerdictOnK2(t *testing.T) {
	example, err := filepath.Abs("../adapters/example_lock.py")
	if err != nil {
		t.Fatal(err)
	}
	sc := withLock(t, "../scenarios/debate/k2-set-nx-px.yaml", "k2-example-adapter",
		fmt.Sprintf("{command: [/usr/bin/python3, %s], service: redis, nodes: 1, token: INCR at acquire}", example))
	o, marker := byolOptions(t)
	res := runOnce(t, sc, o)
	if !res.Matches {
		t.Fatalf("the example adapter misses set-nx-px's K2 verdict: %v\n%s\nrun folder: %s", res.Mismatches, res.Verdict.Summary, res.Dir)
	}
	assertNothingLeft(t, res.Dir, marker)
}

// adapterScript writes a Python lock program that answers init and then misbehaves as told.
func adapterScript(t *testing.T, init, acquire string) string {
	t.Helper()
	src := `import json, sys  # byol-test-adapter
def say(d):
    sys.stdout.write(json.dumps(d) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "init":
` + init + `
        say({"in_reply_to": req["id"], "type": "ok"}); continue
    if req["type"] == "acquire":
` + acquire + `
    say({"in_reply_to": req["id"], "type": "ok"})
`
	path := filepath.Join(t.TempDir(), "byol-test-adapter.py")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A misbehaving adapter ends the run with a harness error that names the client, the line it
// was sent and what it did, and leaves no process behind; an adapter that cannot start fails the
// run before its clock starts.
func TestMisbehavingAdapterEndsTheRunWithAClearError(t *testing.T) {
	for _, c := range []struct {
		name          string
		init, acquire string
		want          []string
	}{
		{"exits-at-start", `        sys.exit("no module named foo: install python3-foo")`, `        pass`,
			[]string{"start clients: client-", `exited while answering {"id":1,"type":"init"`, "install python3-foo"}},
		{"garbage", `        pass`, `        print("acquired!"); sys.stdout.flush(); continue`,
			[]string{"a client's lock broke: client-", `answered "acquired!" to {"id":2,"type":"acquire"`}},
		{"crash", `        pass`, `        sys.exit(7)`,
			[]string{"a client's lock broke: client-", `exited while answering {"id":2,"type":"acquire"`, "exit status 7"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := adapterScript(t, c.init, c.acquire)
			sc := withLock(t, "../scenarios/byol/no-faults-redis-py.yaml", "misbehaving-"+c.name,
				fmt.Sprintf("{command: [/usr/bin/python3, %s], token: none}", path))
			o, marker := byolOptions(t)
			res, err := Run(context.Background(), sc, o)
			if err == nil {
				t.Fatalf("a misbehaving adapter's run reported no error (verdict %s)", res.Verdict.Summary)
			}
			if errors.Is(err, ErrInterrupted) {
				t.Fatalf("want a harness error, got %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			assertNothingLeft(t, res.Dir, marker)
		})
	}
}

// Before anything starts, a scenario whose program this machine cannot run is refused, naming
// the field.
func TestMissingAdapterProgramIsRefusedBeforeTheRun(t *testing.T) {
	sc := withLock(t, "../scenarios/byol/no-faults-redis-py.yaml", "missing-program",
		"{command: [pyhton3, adapter.py], token: none}")
	_, err := Run(context.Background(), sc, testOptions(t))
	if err == nil || !strings.Contains(err.Error(), `lock.command[0]: "pyhton3" is not found in PATH`) {
		t.Fatalf("want the missing program named, got %v", err)
	}
}
