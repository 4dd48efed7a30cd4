package matrix

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/workloads"
)

// A Go library lockcheck does not ship, at two versions: a design file names the user's adapter
// and the module (testdata/user-go), FILE.yaml@VERSION builds it at each. A scenario runs it, and
// the matrix's rows are NAME@VERSION, compared against the first.
func TestUsersGoLibraryAtTwoVersionsOnRealServers(t *testing.T) {
	results := t.TempDir()
	ro := runner.Options{ResultsDir: results, Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv)}
	sc, err := scenarios.Load("testdata/user-go/no-faults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Lock != "redislock@v0.9.3" {
		t.Fatalf("the scenario's lock is %q, want redislock@v0.9.3", sc.Lock)
	}
	res, err := runner.Run(context.Background(), sc, ro)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Matches || res.Verdict.Liveness.Acquisitions < 5 {
		t.Fatalf("no-faults on redislock@v0.9.3: matches %v, %d acquisitions: %v", res.Matches, res.Verdict.Liveness.Acquisitions, res.Mismatches)
	}

	o := Options{Locks: []string{"testdata/user-go/redislock.yaml@v0.9.3", "testdata/user-go/redislock.yaml@v0.9.4"},
		Faults: []string{"none"}, Parallel: 2, Runner: ro}
	m, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{"redislock@v0.9.3", "redislock@v0.9.4"} {
		c, ok := m.Cell(lock, "none")
		if !ok || c.Status != Safe {
			t.Errorf("%s × none: %v %s (%s), want safe", lock, ok, c.Status, c.Detail)
		}
	}
	if r := CompareLocks(m, "redislock@v0.9.3"); len(r) != 0 {
		t.Errorf("v0.9.4 against v0.9.3 without a fault: %+v", r)
	}
	// The rows are named as their cells are, so the table shows them (it once showed "—" in
	// every cell of a row named by its file).
	var table strings.Builder
	m.Markdown(&table, results)
	for _, row := range []string{"| redislock@v0.9.3 | safe", "| redislock@v0.9.4 | safe"} {
		if !strings.Contains(table.String(), row) {
			t.Errorf("matrix.md has no row %q:\n%s", row, table.String())
		}
	}
}

// The same on PostgreSQL: allisson/go-pglock (session advisory locks) at two versions, as
// YOUR-LOCK.md walks it; both keep mutual exclusion with no fault, and the second is no worse.
func TestUsersGoLibraryOnPostgreSQLAtTwoVersions(t *testing.T) {
	sameAndSafe(t, noFaultGrid(t, "testdata/user-go/go-pglock.yaml@v3.0.0", "testdata/user-go/go-pglock.yaml@v3.1.0"),
		"go-pglock@v3.0.0", "go-pglock@v3.1.0")
}

// And on MariaDB: sanketplus/go-mysql-lock v0.0.6 leaves the connection of every attempt that
// found the lock taken open (v0.0.7: "Close database connection whenever failed to acquire
// lock"); with no fault, the server soon refuses new connections ("Too many connections") and
// the clients that wait are starved, while the holder, whose connection lives, takes the lock
// again and again. The run is 12 s, not the matrix's 5 s none cell: the leak fills the server
// after about 1.5 s, and a client is starved only when passed over by more acquisitions than bad
// luck explains (30 here), which a 5 s run reaches with nothing to spare (a fresh CI machine
// read v0.0.6 as safe).
func TestUsersGoLibraryOnMariaDBAtTwoVersions(t *testing.T) {
	results := t.TempDir()
	ro := runner.Options{ResultsDir: results, Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv)}
	const path = "testdata/user-go/go-mysql-lock-leak.yaml"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]checker.Outcome{"v0.0.6": checker.Starved, "v0.0.7": checker.Safe}
	got := map[string]*runner.Result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for version := range want {
		sc, err := scenarios.Parse(path, bytes.ReplaceAll(src, []byte("@v0.0.6"), []byte("@"+version)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runner.Run(context.Background(), sc, ro)
			if err != nil {
				t.Error(version, err)
				return
			}
			mu.Lock()
			got[version] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	for version, outcome := range want {
		if res := got[version]; res != nil {
			if j := checker.Judge(res.Verdict); j.Outcome != outcome {
				t.Errorf("go-mysql-lock@%s with no fault: %s (%s), want %s", version, j.Outcome, checker.Short(res.Verdict), outcome)
			}
		}
	}
}

// noFaultGrid runs the none column for locks, two at a time, in a results folder a database
// run as its own user can reach.
// On etcd: Scalingo/go-etcd-lock (a concurrency.Session and Mutex per Acquire) at v5.0.8 and
// v5.1.0, which added read-write locks, made the write path wait for readers and moved to etcd's
// client v3.6; with no fault both keep mutual exclusion, and v5.1.0 is no worse.
func TestUsersGoLibraryOnEtcdAtTwoVersions(t *testing.T) {
	sameAndSafe(t, noFaultGrid(t, "testdata/user-go/go-etcd-lock.yaml@v5.0.8", "testdata/user-go/go-etcd-lock.yaml@v5.1.0"),
		"go-etcd-lock@v5.0.8", "go-etcd-lock@v5.1.0")
}

// On ZooKeeper: docker/libkv's ZooKeeper store lock at v0.2.1 (on samuel/go-zookeeper) and at
// its last commit (on go-zookeeper/zk v1.0.4).
func TestUsersGoLibraryOnZooKeeperAtTwoVersions(t *testing.T) {
	const next = "v0.2.2-0.20211217151845-dfacc563de57"
	sameAndSafe(t, noFaultGrid(t, "testdata/user-go/libkv.yaml@v0.2.1", "testdata/user-go/libkv.yaml@"+next),
		"libkv@v0.2.1", "libkv@"+next)
}

// sameAndSafe checks a no-fault grid of two versions: both safe, the second no worse.
func sameAndSafe(t *testing.T, m *Matrix, base, next string) {
	t.Helper()
	for _, lock := range []string{base, next} {
		if c, ok := m.Cell(lock, "none"); !ok || c.Status != Safe {
			t.Errorf("%s × none: %v %s (%s), want safe", lock, ok, c.Status, c.Detail)
		}
	}
	if r := CompareLocks(m, base); len(r) != 0 {
		t.Errorf("%s against %s without a fault: %+v", next, base, r)
	}
}

func noFaultGrid(t *testing.T, locks ...string) *Matrix {
	t.Helper()
	results := t.TempDir()
	for _, d := range []string{results, filepath.Dir(results)} {
		os.Chmod(d, 0o755) // PostgreSQL, run as its own user when we are root, must reach its folder
	}
	ro := runner.Options{ResultsDir: results, Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv)}
	m, err := Run(context.Background(), Options{Locks: locks, Faults: []string{"none"}, Parallel: 2, Runner: ro})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A version named with a design file that has no go: section, or a go: section without a module,
// is refused naming the file and the field.
func TestGoDesignFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := dir + "/" + name
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	plain := write("plain.yaml", "command: [./my-lock]\n")
	noModule := write("nomod.yaml", "service: redis\ngo:\n  source: a.go\n  version: v1.0.0\n")
	for _, c := range []struct{ name, want string }{
		{plain + "@v1.0.0", "only a design with a go: section takes a version"},
		{noModule, "nomod.yaml:2: go.module: missing: the library's module path"},
		{noModule + "@1.0", `"v1.0" is not a version`},
	} {
		err := (Options{Locks: []string{c.name}}).Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}
