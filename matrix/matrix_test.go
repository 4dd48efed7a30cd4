package matrix

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/testmain"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/resource"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/workloads"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// Every cell of the full grid is a valid scenario (or a stated n/a), and the YAML its run folder
// keeps loads back to the same scenario.
func TestEveryCellIsAValidScenario(t *testing.T) {
	for _, d := range locks.All() {
		for _, f := range Faults {
			sc, na, err := cellScenario(d, f, 1)
			if na != "" {
				continue
			}
			if err != nil {
				t.Errorf("%s × %s: %v", d.Name, f.Name, err)
				continue
			}
			text, err := sc.YAML()
			if err != nil {
				t.Fatal(err)
			}
			back, err := scenarios.Parse(cellName(d.Name, f.Name)+".yaml", text)
			if err != nil {
				t.Errorf("%s × %s: its YAML does not load: %v\n%s", d.Name, f.Name, err, text)
				continue
			}
			back.Comment = sc.Comment // a comment is not part of the scenario
			if again, _ := back.YAML(); string(again) != string(text) {
				t.Errorf("%s × %s: its YAML loads back to another scenario:\n%s\nthen\n%s", d.Name, f.Name, text, again)
			}
		}
	}
}

func TestUnknownNamesAreRejectedWithTheValidOnes(t *testing.T) {
	err := Options{Locks: []string{"set-nx-px", "redlok"}, Faults: []string{"gc"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "valid locks:") || !strings.Contains(err.Error(), "valid faults: none, pause-after-acquire") {
		t.Fatalf("want both names rejected with the valid lists, got %v", err)
	}
}

func reg(lin string, lost int) checker.RegisterVerdict {
	return checker.RegisterVerdict{Applicable: true, Linearizable: lin, LostUpdates: lost, LostUpdatesKnown: true}
}

// Classify takes the checker's rule (checker.Judge) and adds what a cell shows: the verdict in
// one line and, for an unsafe design without a token, that it has none.
func TestClassify(t *testing.T) {
	overlap := checker.MutualExclusion{Holds: false, Windows: []checker.Overlap{{Clients: [2]string{"client-1", "client-2"}}}}
	live := checker.Liveness{Acquisitions: 10}
	cases := []struct {
		name     string
		v        checker.Verdict
		token    bool
		want     Status
		rescuers string
		detail   string
	}{
		{"control", checker.Verdict{MutualExclusion: checker.MutualExclusion{Holds: true}, Liveness: live,
			Registers: map[string]checker.RegisterVerdict{
				resource.Unfenced: reg(checker.Yes, 0),
			}}, false, Safe, "", "mutual exclusion held; unfenced ok"},
		{"no token", checker.Verdict{MutualExclusion: overlap, Liveness: live,
			Registers: map[string]checker.RegisterVerdict{resource.Unfenced: reg(checker.No, 2)}}, false, Unsafe, "", "no token"},
		{"fencing rescues", checker.Verdict{MutualExclusion: overlap, Liveness: live, Registers: map[string]checker.RegisterVerdict{
			resource.Unfenced: reg(checker.No, 1), resource.FencedWrite: reg(checker.No, 1), resource.FencedRW: reg(checker.Yes, 0)}},
			true, Rescued, resource.FencedRW, "fenced-rw ok"},
		{"overlap without loss is still unsafe", checker.Verdict{MutualExclusion: overlap, Liveness: live,
			Registers: map[string]checker.RegisterVerdict{resource.Unfenced: reg(checker.Yes, 0)}}, false, Unsafe, "", "double ownership"},
		{"stuck", checker.Verdict{MutualExclusion: checker.MutualExclusion{Holds: true}, Liveness: checker.Liveness{Acquisitions: 1, Stuck: true},
			Registers: map[string]checker.RegisterVerdict{resource.Unfenced: reg(checker.Yes, 0)}}, false, Stuck, "", "lock stuck"},
		{"the none column: double ownership is unsafe even when fencing kept the data", checker.Verdict{MutualExclusion: overlap, Liveness: live,
			FaultFree: true, Registers: map[string]checker.RegisterVerdict{
				resource.Unfenced: reg(checker.No, 1), resource.FencedRW: reg(checker.Yes, 0)}}, true, Unsafe, "fenced-rw", "with no fault"},
		{"damaged", checker.Verdict{MutualExclusion: checker.MutualExclusion{Holds: true}, Liveness: live,
			Collateral: checker.Collateral{FailedReleases: 3, FailedByClient: map[string]int{"client-1": 3}},
			Registers:  map[string]checker.RegisterVerdict{resource.Unfenced: reg(checker.Yes, 0)}}, false, Damaged, "", "3 failed releases"},
	}
	for _, c := range cases {
		o := Classify(c.v, c.token)
		if o.Status != c.want || strings.Join(o.Rescuers, ",") != c.rescuers || !strings.Contains(o.Detail, c.detail) {
			t.Errorf(
				"%s: got %s rescued by %v (%q), want %s by %q containing %q",
				c.name,
				o.Status,
				o.Rescuers,
				o.Detail,
				c.want,
				c.rescuers,
				c.detail,
			)
		}
	}
}

func TestCellStatusIsTheMostFrequentAndTiesGoToTheWorse(t *testing.T) {
	c := Cell{Outcomes: []Outcome{{Status: Safe}, {Status: Unsafe, Detail: "bad"}}}
	c.summarise()
	if c.Status != Unsafe || c.Agree != 1 || c.Runs != 2 || c.Label() != "unsafe 1/2" {
		t.Fatalf("got %+v label %q", c, c.Label())
	}
	d := Cell{Outcomes: []Outcome{{Status: Damaged, FailedReleases: 2}}}
	d.summarise()
	if d.Label() != "damaged (failed releases)" {
		t.Errorf("damaged label %q", d.Label())
	}
}

// --require S passes exactly the cells with status S or better in the strict order; n/a always
// passes, error never; no gate passes everything but errors.
func TestMeetsFollowsTheStrictOrder(t *testing.T) {
	order := []Status{Safe, Damaged, Starved, Rescued, Stuck, Inconclusive, Unsafe}
	for i, require := range order {
		for j, status := range order {
			if got := (Cell{Status: status}).Meets(require); got != (j <= i) {
				t.Errorf("%s cell under --require %s: passes %t, want %t", status, require, got, j <= i)
			}
		}
		if !(Cell{Status: NA}).Meets(require) || (Cell{Status: Error}).Meets(require) {
			t.Errorf("--require %s: n/a must pass and error must not", require)
		}
	}
	if !(Cell{Status: Unsafe}).Meets("") || (Cell{Status: Error}).Meets("") {
		t.Error("without a gate every cell but an error passes")
	}
	if _, err := ParseRequire("rescue"); err == nil ||
		!strings.Contains(err.Error(), "want one of safe, damaged, starved, rescued, stuck, inconclusive, unsafe") {
		t.Errorf("ParseRequire(rescue): %v", err)
	}
	if s, err := ParseRequire("damaged"); err != nil || s != Damaged {
		t.Errorf("ParseRequire(damaged): %v %v", s, err)
	}
}

// Cells no fault touches, one after another on the same layout (a Redis server), share one lock
// service: the second cell's run has the first's server, says where its logs are, and judges the
// same as it would alone; the grid stops the service when it ends, leaving its log. The results
// folder is relative, as a user's default is: the servers run in folders of their own.
func TestCellsOfOneLayoutShareAServiceKeptWarm(t *testing.T) {
	t.Chdir(t.TempDir())
	results := "results"
	o := Options{Locks: []string{"set-nx-px", "setnx-del"}, Faults: []string{"none"}, Parallel: 1, Warm: true,
		Runner: runner.Options{ResultsDir: results, Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv)}}
	m, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if m.ServicesKept != 1 || m.ServicesReused != 1 {
		t.Errorf("%d service(s) kept, %d run(s) on a kept one; want 1 and 1", m.ServicesKept, m.ServicesReused)
	}
	var kept []string
	for _, c := range m.Cells {
		if c.Status != Safe {
			t.Errorf("%s × %s: %s (%s), want safe", c.Lock, c.Fault, c.Status, c.Detail)
		}
		b, err := os.ReadFile(filepath.Join(c.Outcomes[0].Dir, runner.WarmFile))
		if err != nil {
			t.Fatalf("%s: %v", c.Lock, err)
		}
		kept = append(kept, strings.TrimSpace(string(b)))
	}
	if len(kept) != 2 || kept[0] != kept[1] || !strings.Contains(kept[0], KeptServersDir) {
		t.Fatalf("the cells' servers ran in %q, want one folder under %s", kept, KeptServersDir)
	}
	server := filepath.Join(kept[0], "servers", "n1")
	if _, err := os.Stat(filepath.Join(server, "redis.log")); err != nil {
		t.Errorf("the kept server's log: %v", err)
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), server) {
			t.Errorf("a process still runs in the kept server's folder after the grid: %s %q", f, b)
		}
	}
}

// A small grid against real servers: a GC pause breaks set-nx-px but fencing rescues it; setnx-del
// has no lease, so a pause does not break it, but a holder that dies leaves it stuck for good.
// Runs admitted while the cores have time to spare, up to four (lockcheck matrix's default, auto):
// they start longest first, and the cells come back in grid order.
func TestSmallGridOnRealServers(t *testing.T) {
	results := t.TempDir()
	o := Options{Locks: []string{"set-nx-px", "setnx-del"}, Faults: []string{"pause-after-acquire", "kill-holder"}, Parallel: 4, Auto: true,
		Runner: runner.Options{ResultsDir: results, Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv)}}
	m, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range m.Cells {
		order = append(order, CellKey(c.Lock, c.Fault))
	}
	if got, want := strings.Join(order, ", "), "set-nx-px × pause-after-acquire, set-nx-px × kill-holder, "+
		"setnx-del × pause-after-acquire, setnx-del × kill-holder"; got != want {
		t.Errorf("cells in the order %s, want %s", got, want)
	}
	if !m.Auto || m.Peak < 1 || m.Peak > 4 {
		t.Errorf("auto %v, up to %d runs side by side: want auto, 1 to 4", m.Auto, m.Peak)
	}
	want := map[[2]string]Status{
		{"set-nx-px", "pause-after-acquire"}: Rescued, {"set-nx-px", "kill-holder"}: Safe,
		{"setnx-del", "pause-after-acquire"}: Safe, {"setnx-del", "kill-holder"}: Stuck,
	}
	for k, s := range want {
		c, ok := m.Cell(k[0], k[1])
		if !ok || c.Status != s {
			t.Errorf("%s × %s: got %s (%s), want %s", k[0], k[1], c.Status, c.Detail, s)
		}
	}
	if bad := m.Gate(Rescued); len(bad) != 1 || bad[0].Lock != "setnx-del" || bad[0].Fault != "kill-holder" {
		t.Errorf("gate rescued: failing cells %v, want only setnx-del × kill-holder", bad)
	}
	dir, err := WriteFolder(results, m)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, MarkdownFile))
	html, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	if !strings.Contains(string(md), "| set-nx-px | rescued (") || !strings.Contains(string(html), `class="stuck"`) {
		t.Errorf("tables do not show the cells:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(results, "matrix", "latest", JSONFile)); err != nil {
		t.Error(err)
	}
}

func TestClockColumnDoesNotApplyToZooKeeper(t *testing.T) {
	d, _ := locks.Get("zk")
	f, _ := faultNamed("clock-jump-node")
	if _, na, _ := cellScenario(d, f, 1); na == "" {
		t.Fatal("clock-jump-node should be n/a for zk")
	}
}
