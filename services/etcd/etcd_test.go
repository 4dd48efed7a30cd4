package etcd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/internal/testmain"
	_ "github.com/lockcheck/lockcheck/providers/local" // where the tests' members run
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/etcd"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// The shortest lease etcd grants follows from the election timeout and heartbeat; ask the real
// server for a 1 s lease under two timings and compare with MinLeaseTTL, then check that the
// scenario loader refuses TTLs etcd would silently change.
func TestMinLeaseTTLIsWhatEtcdGrants(t *testing.T) {
	for _, c := range []struct {
		server string
		want   time.Duration
	}{
		{"", 2 * time.Second}, // etcd's defaults: 1s election timeout, 100ms heartbeat
		{"server: {election_timeout: 500ms, heartbeat: 100ms}\n", time.Second},
	} {
		src := "name: x\nlock: etcd\nnodes: 1\nclients: 1\nttl: 2s\nduration: 2s\n" + c.server
		sc, err := scenarios.Parse("x.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Plan().MinTTL; got != c.want {
			t.Fatalf("%q: MinTTL %v, want %v", c.server, got, c.want)
		}
		top := start(t, sc.Plan())
		granted := grant(t, top.Instance.(*etcd.Cluster).Member("n1").Addr(etcd.ClientPort), 1)
		t.Logf("%q: asked for a 1s lease, etcd granted %ds; MinTTL says %v", c.server, granted, c.want)
		if time.Duration(granted)*time.Second != c.want {
			t.Fatalf("etcd granted %ds, MinLeaseTTL says %v", granted, c.want)
		}
		_ = top.Stop()
	}
}

// Bad settings are named by field and line, with what etcd would do.
func TestSettingsAreChecked(t *testing.T) {
	base := "name: x\nlock: etcd\nnodes: 3\nclients: 2\nttl: 2s\nduration: 2s\nserver:\n  election_timeout: 1s\n"
	cases := []struct {
		name, src string
		want      []string
	}{
		{"ttl below the minimum", strings.Replace(base, "ttl: 2s", "ttl: 1s", 1),
			[]string{"x.yaml:5: ttl:", "would silently become 2s", "server.election_timeout"}},
		{"ttl not whole seconds", strings.Replace(base, "ttl: 2s", "ttl: 2500ms", 1),
			[]string{"x.yaml:5: ttl:", "whole seconds"}},
		{"election timeout under 5 heartbeats", base + "  heartbeat: 300ms\n",
			[]string{"x.yaml:8: server.election_timeout:", "at least 5 heartbeats"}},
		{"unknown setting", strings.Replace(base, "election_timeout", "election", 1),
			[]string{"x.yaml:8: server.election:", "the etcd service takes: election_timeout, heartbeat, version"}},
		{"too many members", strings.Replace(base, "nodes: 3", "nodes: 9", 1),
			[]string{"x.yaml:3: nodes:", "1..7 members"}},
		{"redis settings", strings.Replace(base, "clients: 2", "clients: 2\npersistence: aof-always", 1),
			[]string{"persistence:", "applies to Redis lock nodes only"}},
		{"a node clock", base + "nemesis:\n  - {fault: clock, target: n1, at: 1s, offset: 5s}\n",
			[]string{"libfaketime cannot intercept"}},
		{"a member cut from itself", base + "nemesis:\n  - {fault: partition, target: n1, nodes: [n1], at: 1s, for: 1s}\n",
			[]string{"cannot be cut from itself"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := scenarios.Parse("x.yaml", []byte(c.src))
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
	if _, err := scenarios.Parse("x.yaml", []byte(base+"nemesis:\n  - {fault: partition, target: n1, at: 1s, for: 1s}\n  - {fault: crash, "+
		"target: leader, at: 1s, for: 1s}\n")); err != nil {
		t.Fatalf("a member's partition and a leader crash are valid: %v", err)
	}
}

// Three members start on free ports with n1 leading, and clients reach them through their links.
// Every path between two members goes through a doorway and the provider's proxy, so cutting the
// leader off from its peers is real: the others elect a new leader, the old one stops serving
// linearizable reads, and after the heal it follows again.
func TestLeaderCutFromPeersIsReplaced(t *testing.T) {
	plan := plan3(t, "")
	began := time.Now()
	top := start(t, plan, "client-1")
	t.Logf("3 members ready, n1 leading, in %v", time.Since(began).Round(time.Millisecond))
	c := top.Instance.(*etcd.Cluster)
	if l := leader(t, c, 5*time.Second); l != "n1" {
		t.Fatalf("leader %s, want n1 (handed over at start)", l)
	}
	// Through client-1's link to n2, a write works; cut that link and it stops.
	link := top.Link("client-1", "n2")
	if err := put(link.Addr(), "k", "v"); err != nil {
		t.Fatalf("put through client-1's link: %v", err)
	}
	if err := link.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := put(link.Addr(), "k", "v2"); err == nil {
		t.Fatal("a put through a cut link succeeded")
	}
	if err := link.Heal(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if _, err := os.Stat(filepath.Join(c.Member(n).Dir(), "peers", "n1:2380")); n != "n1" && err != nil {
			t.Errorf("%s has no doorway to n1: %v", n, err)
		}
	}

	cut := time.Now()
	if err := top.Cut("n1", nil); err != nil {
		t.Fatal(err)
	}
	var newLeader string
	waitFor(t, 10*time.Second, "a new leader among n2, n3", func() bool {
		newLeader = leaderOf(c, "n2", "n3")
		return newLeader != ""
	})
	t.Logf("n1 cut from its peers: %s leads %v later", newLeader, time.Since(cut).Round(time.Millisecond))
	waitFor(t, 5*time.Second, "n1 to stop serving", func() bool {
		return linearizableRead(c.Member("n1").Addr(etcd.ClientPort)) != nil
	})
	if err := top.Heal("n1", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "n1 serving again after the heal", func() bool {
		return linearizableRead(c.Member("n1").Addr(etcd.ClientPort)) == nil
	})
}

// The leader role is resolved when a fault starts: killing it elects another member, and its
// restart brings the same member back as a follower that serves.
func TestLeaderCrashAndRestart(t *testing.T) {
	top := start(t, plan3(t, ""))
	c := top.Instance.(*etcd.Cluster)
	role := top.Targets()[etcd.Leader]
	if err := role.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var next string
	waitFor(t, 10*time.Second, "a new leader among n2, n3", func() bool {
		next = leaderOf(c, "n2", "n3")
		return next != ""
	})
	t.Logf("n1 killed: %s leads %v later", next, time.Since(killed).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := role.(interface{ Restart(context.Context) error }).Restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := linearizableRead(c.Member("n1").Addr(etcd.ClientPort)); err != nil {
		t.Fatalf("n1 restarted but does not serve: %v", err)
	}
}

// A single member needs no doorway; its data folder is in the run folder.
func TestSingleMember(t *testing.T) {
	sc, err := scenarios.Parse("x.yaml", []byte("name: x\nlock: etcd\nnodes: 1\nclients: 1\nttl: 2s\nduration: 2s\n"))
	if err != nil {
		t.Fatal(err)
	}
	top := start(t, sc.Plan(), "client-1")
	c := top.Instance.(*etcd.Cluster)
	if _, err := os.Stat(filepath.Join(c.Member("n1").Dir(), "data", "member")); err != nil {
		t.Fatalf("no data folder: %v", err)
	}
	if e := top.Endpoints("client-1"); len(e.Nodes) != 1 || e.Nodes[0] != top.Link("client-1", "n1").Addr() {
		t.Fatalf("endpoints %v, want client-1's link", e)
	}
	if err := put(top.Endpoints("client-1").Nodes[0], "k", "v"); err != nil {
		t.Fatal(err)
	}
	// Stop removes the 64 MB preallocated write-ahead log, and keeps the rest of the data folder.
	if err := top.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.Member("n1").Dir(), "data", "member", "wal")); !os.IsNotExist(err) {
		t.Fatalf("the WAL is still there after Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.Member("n1").Dir(), "data", "member", "snap", "db")); err != nil {
		t.Fatalf("the database went too: %v", err)
	}
}

// BenchmarkStartThreeMembers: start time of a 3-member cluster (ready, n1 leading) and the
// members' resident memory right after.
//
//	go test -run '^$' -bench StartThreeMembers -benchtime 5x ./services/etcd/
func BenchmarkStartThreeMembers(b *testing.B) {
	p := plan3(b, "")
	var rss float64
	for i := 0; i < b.N; i++ {
		top, err := services.Start(context.Background(), p, services.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		c := top.Instance.(*etcd.Cluster)
		for _, n := range c.Names() {
			kb, err := residentKB(c.Member(n).(interface{ Pid() int }).Pid())
			if err != nil {
				b.Fatal(err)
			}
			rss += float64(kb) / 1024
		}
		_ = top.Stop()
		b.StartTimer()
	}
	b.ReportMetric(rss/float64(b.N), "MB-RSS-3-members")
}

func residentKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		}
	}
	return 0, errors.New("no VmRSS")
}

func plan3(t testing.TB, server string) *services.Plan {
	t.Helper()
	sc, err := scenarios.Parse("x.yaml", []byte("name: x\nlock: etcd\nnodes: 3\nclients: 1\nttl: 2s\nduration: 2s\n"+server))
	if err != nil {
		t.Fatal(err)
	}
	return sc.Plan()
}

func start(t testing.TB, p *services.Plan, clients ...string) *services.Topology {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	dir := t.TempDir()
	top, err := services.Start(ctx, p, services.Options{Dir: dir, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := top.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		if pids := proc.Mentioning(dir); len(pids) > 0 {
			t.Errorf("etcd processes left after Stop: %v", pids)
		}
	})
	return top
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func leader(t *testing.T, c *etcd.Cluster, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	n, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n.Name()
}

// leaderOf returns which of members says it leads, if exactly one does and the others follow it.
func leaderOf(c *etcd.Cluster, members ...string) string {
	var leader string
	for _, m := range members {
		var r struct {
			Header struct {
				MemberID string `json:"member_id"`
			} `json:"header"`
			Leader string `json:"leader"`
		}
		if post(c.Member(m).Addr(etcd.ClientPort), "/v3/maintenance/status", "{}", &r) != nil || r.Leader == "" || r.Leader == "0" {
			return ""
		}
		if r.Leader == r.Header.MemberID {
			leader = m
		}
		if r.Leader == strconv.FormatUint(c.ID("n1"), 10) {
			return ""
		}
	}
	return leader
}

func post(addr, path, body string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, buf.String())
	}
	if out != nil {
		return json.Unmarshal(buf.Bytes(), out)
	}
	return nil
}

func put(addr, key, value string) error {
	return post(addr, "/v3/kv/put", fmt.Sprintf(`{"key":%q,"value":%q}`, b64(key), b64(value)), nil)
}

func linearizableRead(addr string) error {
	return post(addr, "/v3/kv/range", fmt.Sprintf(`{"key":%q}`, b64("k")), nil)
}

func grant(t *testing.T, addr string, ttl int) int64 {
	t.Helper()
	var r struct {
		TTL string `json:"TTL"`
	}
	if err := post(addr, "/v3/lease/grant", fmt.Sprintf(`{"TTL":%d}`, ttl), &r); err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(r.TTL, 10, 64)
	if err != nil {
		t.Fatalf("grant answer %+v: %v", r, err)
	}
	return n
}

func b64(s string) string {
	out, _ := json.Marshal([]byte(s))
	return strings.Trim(string(out), `"`)
}

// startOneMember starts one etcd member for the etcd design, with the address of its client port.
func startOneMember(t *testing.T) (*services.Topology, *etcd.Cluster, string) {
	t.Helper()
	sc, err := scenarios.Parse("x.yaml", []byte("name: x\nlock: etcd\nnodes: 1\nclients: 1\nttl: 2s\nduration: 2s\n"))
	if err != nil {
		t.Fatal(err)
	}
	top := start(t, sc.Plan())
	c := top.Instance.(*etcd.Cluster)
	return top, c, c.Member("n1").Addr(etcd.ClientPort)
}

// Cleanup removes the lock's keys and nothing else.
func TestCleanupRemovesTheLocksKeys(t *testing.T) {
	_, c, addr := startOneMember(t)
	for _, k := range []string{"/lockcheck/run-1/a", "/lockcheck/run-1/b", "/lockcheck/run-10/a", "other"} {
		if err := put(addr, k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Cleanup(context.Background(), "run-1"); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"/lockcheck/run-1/a": false, "/lockcheck/run-1/b": false, "/lockcheck/run-10/a": true, "other": true} {
		var r struct {
			Count string `json:"count"`
		}
		if err := post(addr, "/v3/kv/range", fmt.Sprintf(`{"key":%q}`, b64(k)), &r); err != nil {
			t.Fatal(err)
		}
		if got := r.Count == "1"; got != want {
			t.Errorf("%s still there: %v, want %v", k, got, want)
		}
	}
}

// Leases names the lease that keeps one of the run's keys, as granted, and no other lease.
func TestLeasesAreThoseThatKeepTheRunsKeys(t *testing.T) {
	top, _, addr := startOneMember(t)
	for k, ttl := range map[string]int{"/lockcheck/run-2/k": 7, "other": 5} {
		var g struct {
			ID string `json:"ID"`
		}
		if err := post(addr, "/v3/lease/grant", fmt.Sprintf(`{"TTL":%d}`, ttl), &g); err != nil {
			t.Fatal(err)
		}
		if err := post(addr, "/v3/kv/put", fmt.Sprintf(`{"key":%q,"value":%q,"lease":%s}`, b64(k), b64("v"), g.ID), nil); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := top.Leases(t.Context(), "run-2")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Granted != 7*time.Second || ls[0].Left <= 0 || ls[0].Left > 7*time.Second || ls[0].Server != "n1" {
		t.Fatalf("leases of run-2: %+v, want one granted 7s", ls)
	}
}
