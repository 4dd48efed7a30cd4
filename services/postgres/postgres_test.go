package postgres_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockcheck/lockcheck/locks"
	_ "github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
	_ "github.com/lockcheck/lockcheck/services/all"
	"github.com/lockcheck/lockcheck/services/postgres"
)

// passableTempDir is a t.TempDir that the postgres user may pass through.
func passableTempDir(t testing.TB) string {
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// start starts the PostgreSQL service of pg-advisory with the given `server:` YAML (or none) in
// dir and one client link, and returns it with the client's connection string.
func start(t testing.TB, dir, server string) (*services.Topology, string) {
	t.Helper()
	src := "name: t\nlock: pg-advisory\nclients: 1\nduration: 1s\n"
	if server != "" {
		src += "server: " + server + "\n"
	}
	sc, err := scenarios.Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	top, err := services.Start(ctx, sc.Plan(), services.Options{Dir: dir, Clients: []string{"client-1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = top.Stop() })
	e := top.Endpoints("client-1")
	if e.Params[locks.ParamUser] != postgres.User || len(e.Nodes) != 1 {
		t.Fatalf("endpoints %+v: want the client's link, user and database", e)
	}
	return top, postgres.ConnString(e.Nodes[0], e.Params[locks.ParamUser], e.Params[locks.ParamDatabase], time.Second)
}

type node interface {
	Pid() int
	Dir() string
	Addr(string) string
	Restart(context.Context) error
}

func connect(t *testing.T, ctx context.Context, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// The server is a local process on a free 127.0.0.1 port, running as the postgres user (when
// the harness is root) with its own data folder in the run folder; a crash-restart keeps
// committed data and drops advisory locks; Stop ends every process of it.
func TestServerRunsLocallyAsPostgresWithItsDataInTheRunFolder(t *testing.T) {
	top, dsn := start(t, passableTempDir(t), "")
	n := top.Targets()[postgres.Node].(node)
	if !strings.HasPrefix(n.Addr(postgres.ClientPort), "127.0.0.1:") {
		t.Errorf("server address %s, want 127.0.0.1", n.Addr(postgres.ClientPort))
	}
	data := filepath.Join(n.Dir(), "data")
	st, err := os.Stat(filepath.Join(data, "PG_VERSION"))
	if err != nil {
		t.Fatalf("no data folder made by initdb in the node's folder: %v", err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup(postgres.User)
		if err != nil {
			t.Fatal(err)
		}
		if uid := strconv.Itoa(int(st.Sys().(*syscall.Stat_t).Uid)); uid != u.Uid {
			t.Errorf("data folder owned by uid %s, want %s (%s)", uid, u.Uid, postgres.User)
		}
		if uid := processUID(t, n.Pid()); uid != u.Uid {
			t.Errorf("server runs as uid %s, want %s (%s)", uid, u.Uid, postgres.User)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := connect(t, ctx, dsn)
	if _, err := c.Exec(ctx, "CREATE TABLE kept (id int PRIMARY KEY); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var locked bool
	if err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&locked); err != nil || !locked {
		t.Fatalf("advisory lock: %v, %v", locked, err)
	}
	pid := n.Pid()
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("restart kept process %d", pid)
	}
	c2 := connect(t, ctx, dsn)
	var rows int
	if err := c2.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("after a crash-restart the committed row is gone: %d, %v", rows, err)
	}
	if err := c2.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&locked); err != nil || !locked {
		t.Errorf("after a crash-restart the advisory lock is still held: %v, %v", locked, err)
	}
	pid = n.Pid()
	if err := top.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("server %d outlived Stop", pid)
	}
}

// A crash-restart starts the new server only once no process works in the data folder (a
// backend of the killed server still exiting would keep its shared memory attached): here a
// process of the test's own, whose working folder is the data folder, ends first. It runs as the
// server's user, as a backend does (the look cannot see another user's working folder).
func TestRestartWaitsForEveryProcessInTheDataFolder(t *testing.T) {
	top, _ := start(t, passableTempDir(t), "")
	n := top.Targets()[postgres.Node].(node)
	lingering := exec.Command("sleep", "1.5")
	lingering.Dir = filepath.Join(n.Dir(), "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup(postgres.User)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		lingering.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if err := lingering.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = lingering.Wait(); close(ended) }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("the restarted server is up while a process still works in its data folder")
	}
}

// The first server on a machine leaves the data folder initdb made as a template, and the next
// server's data folder is a copy of it (a file put into the template shows up in the copy), with
// the same owner and mode PostgreSQL insists on.
func TestTheNextServerCopiesTheFirstServersFreshDataFolder(t *testing.T) {
	cache := passableTempDir(t)
	if err := os.Chmod(cache, 0o777); err != nil { // the server's user makes its folders in it
		t.Fatal(err)
	}
	t.Cleanup(postgres.SetTemplateCache(cache))
	start(t, passableTempDir(t), "")
	templates, _ := filepath.Glob(filepath.Join(cache, "*", "PG_VERSION"))
	if len(templates) != 1 {
		t.Fatalf("templates after the first start: %v, want one", templates)
	}
	template := filepath.Dir(templates[0])
	marker := filepath.Join(template, "marker")
	if err := os.WriteFile(marker, []byte("from the template"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(template); err == nil { // the template's owner, who copies it
		sys := st.Sys().(*syscall.Stat_t)
		if err := os.Chown(marker, int(sys.Uid), int(sys.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	top, dsn := start(t, passableTempDir(t), "")
	data := filepath.Join(top.Targets()[postgres.Node].(node).Dir(), "data")
	if b, err := os.ReadFile(filepath.Join(data, "marker")); err != nil || string(b) != "from the template" {
		t.Fatalf("the second server's data folder is not the template's copy: %q, %v", b, err)
	}
	if st, err := os.Stat(data); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("data folder mode %v (%v), want 0700", st.Mode().Perm(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var one int
	if err := connect(t, ctx, dsn).QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("a query on the copied data folder: %d, %v", one, err)
	}
}

// The idle limits from `server:` reach the server: a session idle past idle_session_timeout is
// ended with SQLSTATE 57P05, one idle inside a transaction past
// idle_in_transaction_session_timeout with 25P03; with the defaults neither is.
func TestIdleLimitsEndSessions(t *testing.T) {
	dir := passableTempDir(t)
	for _, tt := range []struct {
		name, server, begin, code string
	}{
		{"session", "{idle_session_timeout: 1s}", "", "57P05"},
		{"transaction", "{idle_in_transaction_session_timeout: 1s}", "BEGIN", "25P03"},
		{"defaults", "", "BEGIN", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, dsn := start(t, filepath.Join(dir, tt.name), tt.server)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := connect(t, ctx, dsn)
			if tt.begin != "" {
				if _, err := c.Exec(ctx, tt.begin); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(1500 * time.Millisecond)
			_, err := c.Exec(ctx, "SELECT 1")
			var pe *pgconn.PgError
			code := ""
			if errors.As(err, &pe) {
				code = pe.Code
			}
			if code != tt.code || (tt.code == "" && err != nil) {
				t.Errorf("after 1.5 s idle: %v (SQLSTATE %q); want SQLSTATE %q", err, code, tt.code)
			}
		})
	}
}

// Settings are checked when the scenario loads, naming the field and the valid settings; a
// results folder the postgres user cannot enter is refused with a clear error.
func TestBadSettingsNameTheField(t *testing.T) {
	for _, tt := range []struct{ server, want string }{
		{"{idle_session_timeout: 1500us}", "t.yaml:5: server.idle_session_timeout: 1.5ms: PostgreSQL takes whole milliseconds"},
		{"{wait_timeout: 1s}", "server.wait_timeout: unknown setting; the postgres service takes: idle_in_transaction_session_timeout, " +
			"idle_session_timeout"},
	} {
		_, err := scenarios.Parse("t.yaml", []byte("name: t\nlock: pg-advisory\nclients: 1\nduration: 1s\nserver: "+tt.server+"\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("server: %s: got %v, want an error containing %q", tt.server, err, tt.want)
		}
	}
	if os.Geteuid() != 0 {
		return
	}
	closed := t.TempDir() // mode 0700, owned by root
	d, _ := locks.Get("pg-advisory")
	_, err := services.StartKind(context.Background(), services.Spec{Design: d}, services.Options{Dir: closed, Clients: []string{"c"}})
	if err == nil || !strings.Contains(err.Error(), "cannot enter") {
		t.Errorf("a results folder postgres cannot enter: got %v", err)
	}
}

// BenchmarkStart measures a start of a fresh server (initdb, then the server) until it answers
// queries, and its memory then (every process of it):
//
//	go test -run '^$' -bench Start -benchtime 5x ./services/postgres/
func BenchmarkStart(b *testing.B) {
	dir := passableTempDir(b)
	var rss float64
	i := 0
	for b.Loop() {
		i++
		top, _ := start(b, filepath.Join(dir, strconv.Itoa(i)), "")
		b.StopTimer()
		rss += float64(groupRSS(top.Targets()[postgres.Node].(node).Pid()))
		_ = top.Stop()
		b.StartTimer()
	}
	b.ReportMetric(rss/float64(b.N)/(1<<20), "RSS-MB")
}

func processUID(t *testing.T, pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			return f[1]
		}
	}
	return ""
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// groupRSS sums the resident memory of every process in pid's process group, in bytes.
func groupRSS(pid int) int64 {
	entries, _ := os.ReadDir("/proc")
	var total int64
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 22 || f[2] != strconv.Itoa(pid) { // field 5 (pgrp), counted after the command
			continue
		}
		pages, _ := strconv.ParseInt(f[21], 10, 64) // field 24 (rss), in pages
		total += pages * int64(os.Getpagesize())
	}
	return total
}
