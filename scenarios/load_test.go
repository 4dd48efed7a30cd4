package scenarios

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
)

func TestEveryShippedScenarioLoads(t *testing.T) {
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 5 {
		t.Fatalf("expected the shipped scenarios here, found %v", files)
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if s.Name+".yaml" != filepath.Base(f) {
			t.Errorf("%s: name %q does not match the file name", f, s.Name)
		}
	}
}

const valid = `name: x
lock: set-nx-px
clients: 2
ttl: 500ms
duration: 2s
nemesis:
  - fault: pause
    target: client-1
    point: after-acquire
    for: 1s
expect:
  mutual_exclusion: violated
`

func TestValidScenarioGetsDefaults(t *testing.T) {
	s, err := Parse("x.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes != 1 || s.Nemesis[0].Occurrence != 1 || s.Workload.Timeout == 0 || s.Workload.AcquireTimeout == 0 {
		t.Fatalf("defaults not applied: %+v", s)
	}
}

func TestErrorsNameFileLineAndField(t *testing.T) {
	cases := []struct {
		name    string
		replace [2]string
		want    []string
	}{
		{"unknown lock lists the valid ones", [2]string{"lock: set-nx-px", "lock: redlok"},
			[]string{"x.yaml:2: lock:", `unknown lock "redlok"`, "set-nx-px", "setnx-del"}},
		{"misspelt field", [2]string{"clients: 2", "clinets: 2"},
			[]string{"x.yaml:3: clinets: unknown field clinets; valid fields: ", "clients, "}},
		{"misspelt collateral bound, several fields on the line", [2]string{"mutual_exclusion: violated", "collateral: {max_failed_releases: 0, " +
			"max_token_anomalys: 0}"},
			[]string{"x.yaml:12: expect.collateral.max_token_anomalys: unknown field max_token_anomalys; valid fields: ", "max_token_anomalies"}},
		{"negative collateral bound", [2]string{"mutual_exclusion: violated", "collateral: {max_legit_rejections: -2}"},
			[]string{"x.yaml:12: expect.collateral.max_legit_rejections: -2 is negative"}},
		{"bad duration", [2]string{"ttl: 500ms", "ttl: 500"},
			[]string{"x.yaml:4: ttl:", "not a duration"}},
		{"syntax error on its line, not the block's", [2]string{"ttl: 500ms", `ttl: "500ms" 2`},
			[]string{"x.yaml:4: did not find expected key"}},
		{"wrong type", [2]string{"clients: 2", "clients: two"},
			[]string{"x.yaml:3: clients:"}},
		{"unknown target", [2]string{"target: client-1", "target: client-9"},
			[]string{"x.yaml:8: nemesis[0].target:", "client-9", "client-1, client-2, n1"}},
		{"unknown point", [2]string{"point: after-acquire", "point: after-lunch"},
			[]string{"x.yaml:9: nemesis[0].point:", "after-acquire, before-write, after-validity-check"}},
		{"point on a server", [2]string{"target: client-1", "target: n1"},
			[]string{"nemesis[0].point:", "n1 is a server"}},
		{"unknown fault", [2]string{"fault: pause", "fault: explode"},
			[]string{"x.yaml:7: nemesis[0].fault:", "pause, kill"}},
		{"pause without length", [2]string{"    for: 1s\n", ""},
			[]string{"nemesis[0].for:", "needs a length"}},
		{"bad expectation", [2]string{"mutual_exclusion: violated", "mutual_exclusion: maybe"},
			[]string{"x.yaml:12: expect.mutual_exclusion:", "maybe"}},
		{"unknown register", [2]string{"mutual_exclusion: violated", "registers: {unfenced-ish: {linearizable: true}}"},
			[]string{"expect.registers.unfenced-ish:", "unfenced, fenced-write, fenced-rw"}},
		{"unknown persistence", [2]string{"duration: 2s\n", "duration: 2s\npersistence: sometimes\n"},
			[]string{"persistence:", "aof-always"}},
		{"clock fault without offset or rate", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    " +
			"for: 1s", "fault: clock\n    target: client-1\n    at: 1s"},
			[]string{"nemesis[0].offset:", "needs an offset"}},
		{"offset on a pause", [2]string{"    for: 1s\n", "    for: 1s\n    offset: 1s\n"},
			[]string{"nemesis[0].offset:", "offset does not apply to a pause fault"}},
		{"clock of an unknown client", [2]string{"duration: 2s\n", "duration: 2s\nclocks:\n  client-7: {offset: 1s}\n"},
			[]string{"clocks.client-7:", "no such client"}},
		{"crash of a client", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s", "fault: crash\n    target: " +
			"client-1\n    at: 1s"},
			[]string{"nemesis[0].target:", "use kill"}},
		{"kill of a server", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s", "fault: kill\n    target: " +
			"n1\n    at: 1s"},
			[]string{"nemesis[0].target:", "use crash"}},
		{"partition to an unknown node", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    " +
			"for: 1s", "fault: partition\n    target: client-1\n    nodes: [n1, n7]\n    at: 1s"},
			[]string{"nemesis[0].nodes:", "n7"}},
		{"leader outside ZooKeeper", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s", "fault: crash\n    " +
			"target: leader\n    at: 1s"},
			[]string{"nemesis[0].target:", "no such target \"leader\""}},
		{"readers on a mutex", [2]string{"duration: 2s\n", "duration: 2s\nworkload: {readers: 1}\n"},
			[]string{"workload.readers:", "not a read/write lock"}},
		{"delay without latency", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s", "fault: delay\n    " +
			"target: client-1\n    nodes: [resource]\n    at: 1s"},
			[]string{"nemesis[0].latency:", "needs a latency"}},
		{"delay until an unknown event", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s", "fault: delay\n    " +
			"target: client-1\n    nodes: [resource]\n    at: 1s\n    for: 1s\n    until: next-write"},
			[]string{"nemesis[0].until:", "until next-read"}},
		{"delay until the next read without for", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s",
			"fault: delay\n    target: client-1\n    nodes: [resource]\n    at: 1s\n    until: next-read"},
			[]string{"nemesis[0].for:", "needs a for:"}},
		{"latency on a pause", [2]string{"    for: 1s\n", "    for: 1s\n    latency: 1s\n"},
			[]string{"nemesis[0].latency:", "latency does not apply to a pause fault"}},
		{"lease without ttl", [2]string{"ttl: 500ms\n", ""},
			[]string{"ttl:", "give it a ttl"}},
		{"re-entry on a design that is not reentrant", [2]string{"duration: 2s\n", "duration: 2s\nworkload: {usage: {reenter: 2}}\n"},
			[]string{"workload.usage.reenter:", "set-nx-px is not reentrant"}},
		{"misspelt usage step", [2]string{"duration: 2s\n", "duration: 2s\nworkload: {usage: {release_retry: 2}}\n"},
			[]string{"workload.usage.release_retry: unknown field", "release-retry", "reenter", "try"}},
		{"negative usage count", [2]string{"duration: 2s\n", "duration: 2s\nworkload: {usage: {release-retry: -1}}\n"},
			[]string{"workload.usage:", "0 or more"}},
		{"abandon on a server", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s", "fault: abandon\n    " +
			"target: n1\n    at: 1s"},
			[]string{"nemesis[0].target:", "abandon is a client's step"}},
		{"abandon at an unknown point", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s", "fault: abandon\n    " +
			"target: waiter\n    at: 1s\n    point: answered"},
			[]string{"nemesis[0].point:", `unknown program point "answered"`}},
		{"abandon with a length", [2]string{"fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s", "fault: abandon\n    " +
			"target: client-2\n    at: 1s\n    for: 1s"},
			[]string{"nemesis[0].for:", "abandoning an attempt is instant"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(valid, c.replace[0], c.replace[1], 1)
			_, err := Parse("x.yaml", []byte(src))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// An external program offers abandon only when it says so; an in-process design always does.
func TestAbandonGoesOnlyToClientsWhoseLockGivesUpAnAttempt(t *testing.T) {
	step := "fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s"
	src := strings.Replace(valid, step, "fault: abandon\n    target: waiter\n    at: 1s", 1)
	if _, err := Parse("x.yaml", []byte(src)); err != nil {
		t.Fatalf("set-nx-px runs in lockcheck's process and can be abandoned: %v", err)
	}
	ext := strings.Replace(src, "lock: set-nx-px", "lock: {command: [python3, lock.py], nodes: 1, token: none}", 1)
	if _, err := Parse("x.yaml", []byte(ext)); err == nil || !strings.Contains(err.Error(), "does not give up an attempt when told") {
		t.Fatalf("a program that does not offer abandon must be refused it, got %v", err)
	}
	ext = strings.Replace(ext, "token: none}", "token: none, usage: [abandon]}", 1)
	if _, err := Parse("x.yaml", []byte(ext)); err != nil {
		t.Fatalf("a program that offers abandon takes it: %v", err)
	}
	bad := strings.Replace(ext, "usage: [abandon]", "usage: [abandn]", 1)
	if _, err := Parse("x.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "valid steps: reenter, try, abandon, release-retry") {
		t.Fatalf("an unknown step must list the valid ones, got %v", err)
	}
	if nemesis.Abandon != locks.UsageAbandon {
		t.Fatalf("the nemesis's step %q and the vocabulary's %q must be one name", nemesis.Abandon, locks.UsageAbandon)
	}
}

func TestSeveralProblemsAreReportedTogether(t *testing.T) {
	src := strings.Replace(strings.Replace(valid, "clients: 2", "clients: 0", 1), "lock: set-nx-px", "lock: nope", 1)
	_, err := Parse("x.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "lock:") || !strings.Contains(err.Error(), "clients:") {
		t.Fatalf("want both problems, got %v", err)
	}
}

// What a scenario asks of its lock service is the service kind's to check: its settings (`server:`)
// and the node count, each error at its line.
func TestServiceSettingsAreCheckedByTheirKind(t *testing.T) {
	zk := "name: x\nlock: zk\nclients: 2\nttl: 1s\nduration: 2s\nserver:\n  tick_time: 250ms\n"
	if s, err := Parse("x.yaml", []byte(zk)); err != nil {
		t.Fatal(err)
	} else if s.Plan().MinTTL != 500*time.Millisecond {
		t.Fatalf("a 250ms tick gives sessions of at least 500ms, got %v", s.Plan().MinTTL)
	}
	cases := []struct {
		name, src string
		want      []string
	}{
		{"unknown setting", strings.Replace(zk, "tick_time: 250ms", "tik: 1s", 1),
			[]string{"x.yaml:7: server.tik:", "unknown setting", "the zookeeper service takes: tick_time"}},
		{"bad value", strings.Replace(zk, "250ms", "soon", 1),
			[]string{"x.yaml:7: server.tick_time:", "not a duration"}},
		{"a session the ensemble would clamp", strings.Replace(zk, "ttl: 1s", "ttl: 200ms", 1),
			[]string{"x.yaml:4: ttl:", "between 2 and 20 ticks"}},
		{"settings a kind does not take", "name: x\nlock: set-nx-px\nclients: 2\nttl: 1s\nduration: 2s\nserver: {maxmemory: 1mb}\n",
			[]string{"x.yaml:6: server.maxmemory:", "the redis service takes: persistence, replicas, sentinels"}},
		{"too many servers", strings.Replace(zk, "clients: 2", "nodes: 12\nclients: 2", 1),
			[]string{"x.yaml:3: nodes:", "1..9 servers"}},
		{"unknown provider", strings.Replace(zk, "clients: 2", "provider: cloud\nclients: 2", 1),
			[]string{"x.yaml:3: provider:", `unknown provider "cloud"`, "local"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(c.src))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// One acquire attempt lasts four command timeouts unless workload.attempt says otherwise (in time
// units or TTLs), and never past the acquire timeout; expect.exercised needs a fault.
func TestAttemptBound(t *testing.T) {
	for _, c := range []struct {
		workload string
		want     time.Duration
	}{
		{"", time.Second}, // 4 × the default 250ms
		{"workload: {timeout: 100ms}", 400 * time.Millisecond},
		{"workload: {attempt: 1500ms}", 1500 * time.Millisecond},
		{"workload: {attempt: 3ttl}", 1500 * time.Millisecond}, // ttl 500ms
		{"workload: {attempt: 5s, acquire_timeout: 3s}", 3 * time.Second},
	} {
		s, err := Parse("x.yaml", []byte(valid+c.workload+"\n"))
		if err != nil {
			t.Fatalf("%q: %v", c.workload, err)
		}
		if got := s.Workload.AttemptBound(); got != c.want {
			t.Errorf("%q: attempt bound %s, want %s", c.workload, got, c.want)
		}
	}
	faultless := strings.Replace(valid, "nemesis:\n  - fault: pause\n    target: client-1\n    point: after-acquire\n    for: 1s\n", "", 1)
	faultless = strings.Replace(faultless, "mutual_exclusion: violated", "exercised: true", 1)
	if _, err := Parse("x.yaml", []byte(faultless)); err == nil || !strings.Contains(err.Error(), "expect.exercised: this scenario has no fault to exercise") {
		t.Errorf("exercised without a fault: %v", err)
	}
	if _, err := Parse("x.yaml", []byte(valid+"  exercised: true\n")); err != nil {
		t.Errorf("exercised with a fault: %v", err)
	}
}

// A run folder's copy of a run whose lock a Go test registered (lockchecktest) loads anywhere
// from its design: block: the lock's service lays out the plan (db1 for PostgreSQL, so a fault
// on db1 is valid), and the design says where its code is if asked to run. Without the block the
// lock is unknown; a registered design of that name wins over the block.
func TestRecordedDesignLoadsWithoutTheRegistration(t *testing.T) {
	const run = `name: x
lock: our-pg-lock
clients: 2
duration: 2s
nemesis:
  - {fault: crash, target: db1, at: 1s, for: 100ms}
design:
  name: our-pg-lock
  service: postgres
  nodes: 1
  token: nextval
`
	s, err := Parse("x.yaml", []byte(run))
	if err != nil {
		t.Fatal(err)
	}
	if s.Lock != "our-pg-lock" || s.Service() != "postgres" || strings.Join(s.NodeNames(), ",") != "db1" || !s.Design().HasToken() {
		t.Errorf("lock %s on %s, nodes %v", s.Lock, s.Service(), s.NodeNames())
	}
	if err := s.Prepare(); err == nil || !strings.Contains(err.Error(), "a Go test registered it (lockchecktest)") {
		t.Errorf("preparing to run a recorded design: %v", err)
	}
	without := strings.Split(run, "design:")[0]
	if _, err := Parse("x.yaml", []byte(without)); err == nil || !strings.Contains(err.Error(), `unknown lock "our-pg-lock"`) {
		t.Errorf("without its design: block: %v", err)
	}
	named := strings.Replace(run, "our-pg-lock", "set-nx-px", 2)
	if s, err := Parse("x.yaml", []byte(strings.Replace(named, "target: db1", "target: n1", 1)+"ttl: 1s\n")); err != nil || s.Service() != "redis" {
		t.Errorf("a registered design's name: %v (service %s)", err, s.Service())
	}
}
