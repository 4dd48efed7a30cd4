package runner

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Two CI jobs on one machine: two runs of the same scenario, started at the same moment into the
// same results folder, each get their own servers (ports), their own run folder and a complete
// history of their own; latest points at one of them.
func TestTwoRunsAtOnceDoNotCollide(t *testing.T) {
	sc, err := scenarios.Load("../scenarios/no-faults-setnx-del.yaml") // no lease: no stall of a busy machine changes its verdict
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions(t) // one results folder for both
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		res   [2]*Result
		errs  [2]error
	)
	for i := range res {
		wg.Go(func() {
			<-start
			res[i], errs[i] = Run(context.Background(), sc, o)
		})
	}
	close(start)
	wg.Wait()
	for i := range res {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i+1, errs[i])
		}
	}
	if res[0].Dir == res[1].Dir {
		t.Fatalf("both runs wrote into %s", res[0].Dir)
	}

	ports := map[string]string{} // port -> which server of which run
	for i, r := range res {
		// A run that had read or written the other's servers would not be linearizable or would
		// count updates it never made: the no-fault verdict is the proof that they were apart.
		if !r.Matches {
			t.Errorf("run %d (%s) does not match the no-fault expect: %v\n%s", i+1, r.Dir, r.Mismatches, r.Verdict.Summary)
		}
		assertCompleteHistory(t, r.Dir, sc.ClientNames())
		for _, server := range []string{"n1", "resource"} {
			p := serverPort(t, filepath.Join(r.Dir, "servers", server, "redis.log"))
			who := filepath.Base(r.Dir) + "/" + server
			if other, dup := ports[p]; dup {
				t.Errorf("port %s used by both %s and %s", p, other, who)
			}
			ports[p] = who
		}
	}
	latest, err := os.Readlink(filepath.Join(o.ResultsDir, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	if rel0, _ := filepath.Rel(o.ResultsDir, res[0].Dir); latest != rel0 {
		if rel1, _ := filepath.Rel(o.ResultsDir, res[1].Dir); latest != rel1 {
			t.Errorf("latest -> %s, want one of the two run folders", latest)
		}
	}
}

// Many runs asking for a folder in the same millisecond each get their own.
func TestRunFoldersAreUniqueWithinAMillisecond(t *testing.T) {
	sc := &scenarios.Scenario{Name: "same-moment", Source: []byte("name: same-moment\n")}
	root := t.TempDir()
	dirs := make([]string, 16)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Go(func() {
			d, err := newRunDir(root, sc)
			if err != nil {
				t.Error(err)
			}
			dirs[i] = d
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			t.Fatalf("run folder %s handed out twice", d)
		}
		seen[d] = true
		if _, err := os.Stat(filepath.Join(d, ScenarioFile)); err != nil {
			t.Error(err)
		}
	}
}

func assertCompleteHistory(t *testing.T, dir string, clients []string) {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var start, end, final bool
	acquired := map[string]bool{}
	for _, e := range events {
		start = start || (e.F == history.Start && e.Process == history.Controller)
		end = end || (e.F == history.End && e.Process == history.Controller)
		final = final || e.F == history.Final
		if e.F == history.Acquire && e.Type == history.OK {
			acquired[e.Process] = true
		}
	}
	if !start || !end || !final {
		t.Errorf("%s: history lacks the start note (%v), the end note (%v) or the final values (%v)", dir, start, end, final)
	}
	for _, c := range clients {
		if !acquired[c] {
			t.Errorf("%s: %s never acquired the lock", dir, c)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	if len(logs) != len(clients) {
		t.Errorf("%s: %d client logs, want %d: %v", dir, len(logs), len(clients), logs)
	}
}

var portRE = regexp.MustCompile(`port=(\d+)`)

// serverPort reads the port a redis-server says it listens on from its log.
func serverPort(t *testing.T, log string) string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	m := portRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s names no port", log)
	}
	return string(m[1])
}
