package mariadb_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	_ "github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
	_ "github.com/lockcheck/lockcheck/services/all"
	"github.com/lockcheck/lockcheck/services/mariadb"
)

// start starts the MariaDB service of mysql-get-lock with the given `server:` YAML (or none) and
// one client link, and returns it with a database handle through the client's link.
func start(t testing.TB, server string) (*services.Topology, *sql.DB) {
	t.Helper()
	src := "name: t\nlock: mysql-get-lock\nclients: 1\nduration: 1s\n"
	if server != "" {
		src += "server: " + server + "\n"
	}
	sc, err := scenarios.Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	top, err := services.Start(ctx, sc.Plan(), services.Options{Dir: t.TempDir(), Clients: []string{"client-1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = top.Stop() })
	e := top.Endpoints("client-1")
	if e.Params[locks.ParamDatabase] != mariadb.Database || len(e.Nodes) != 1 {
		t.Fatalf("endpoints %+v: want the client's link and the lock database", e)
	}
	db, err := sql.Open("mysql", mariadb.DSN(e.Nodes[0], time.Second))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return top, db
}

type pider interface{ Pid() int }

// The server is a local process of the harness on a free 127.0.0.1 port, with its data folder in
// the run folder; a crash-restart keeps committed rows and drops the sessions' named locks; Stop
// ends it.
func TestServerRunsLocallyWithItsDataInTheRunFolder(t *testing.T) {
	top, db := start(t, "")
	node := top.Targets()[mariadb.Node].(interface {
		pider
		Dir() string
		Addr(string) string
		Restart(context.Context) error
	})
	if !strings.HasPrefix(node.Addr(mariadb.ClientPort), "127.0.0.1:") {
		t.Errorf("server address %s, want 127.0.0.1", node.Addr(mariadb.ClientPort))
	}
	if _, err := os.Stat(filepath.Join(node.Dir(), "data", "ibdata1")); err != nil {
		t.Errorf("no InnoDB data in the node's folder: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mustExec(t, db, "CREATE TABLE kept (id INT PRIMARY KEY) ENGINE=InnoDB")
	mustExec(t, db, "INSERT INTO kept VALUES (1)")
	var got int
	if err := db.QueryRowContext(ctx, "SELECT GET_LOCK('held', 0)").Scan(&got); err != nil || got != 1 {
		t.Fatalf("GET_LOCK: %d, %v", got, err)
	}
	pid := node.Pid()
	if err := node.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if node.Pid() == pid || alive(pid) {
		t.Errorf("restart kept process %d", pid)
	}
	db.SetMaxOpenConns(2) // the old session died with the server
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM kept").Scan(&got); err != nil || got != 1 {
		t.Errorf("after a crash-restart the committed row is gone: %d, %v", got, err)
	}
	var user sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK('held')").Scan(&user); err != nil || user.Valid {
		t.Errorf("after a crash-restart the named lock is still held (by session %v): %v", user, err)
	}
	pid = node.Pid()
	if err := top.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("server %d outlived Stop", pid)
	}
}

// wait_timeout from `server:` reaches the server: an idle session is ended after it, and with
// the default it is not.
func TestWaitTimeoutEndsIdleSessions(t *testing.T) {
	for _, tt := range []struct {
		server string
		ended  bool
	}{{"{wait_timeout: 1s}", true}, {"", false}} {
		t.Run("server="+tt.server, func(t *testing.T) {
			_, db := start(t, tt.server)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var one int
			if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond)
			err = conn.QueryRowContext(ctx, "SELECT 1").Scan(&one)
			if ended := err != nil; ended != tt.ended {
				t.Errorf("after 1.5 s idle: error %v; want the session ended: %v", err, tt.ended)
			}
		})
	}
}

// Settings are checked when the scenario loads, naming the field and the valid settings.
// A server kept for the next run loses the rows the MariaDB designs kept under the run's key, and
// only those; a table no design has made yet is no error.
func TestCleanupRemovesTheRunsRows(t *testing.T) {
	top, db := start(t, "")
	clean := top.Instance.(services.Cleaner)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := clean.Cleanup(ctx, "lockcheck:run-1:lock"); err != nil {
		t.Fatalf("before any table exists: %v", err)
	}
	for _, table := range locks.MariaDBLockTables {
		mustExec(t, db, "CREATE TABLE "+table+" (method_name VARCHAR(64) NOT NULL PRIMARY KEY)")
		mustExec(t, db, "INSERT INTO "+table+" VALUES ('lockcheck:run-1:lock'), ('lockcheck:run-0:lock')")
	}
	if err := clean.Cleanup(ctx, "lockcheck:run-1:lock"); err != nil {
		t.Fatal(err)
	}
	for _, table := range locks.MariaDBLockTables {
		var left []string
		rows, err := db.QueryContext(ctx, "SELECT method_name FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			left = append(left, n)
		}
		_ = rows.Close()
		if len(left) != 1 || left[0] != "lockcheck:run-0:lock" {
			t.Errorf("%s after the clean-up: %q, want only the other run's row", table, left)
		}
	}
}

func TestBadSettingsNameTheField(t *testing.T) {
	for _, tt := range []struct{ server, want string }{
		{"{wait_timeout: 1500ms}", "t.yaml:5: server.wait_timeout: 1.5s: MariaDB takes whole seconds"},
		{"{wait_timeout: 2}", "server.wait_timeout"},
		{"{tick_time: 1s}", "server.tick_time: unknown setting; the mariadb service takes: wait_timeout, idle_transaction_timeout, " +
			"innodb_lock_wait_timeout"},
	} {
		_, err := scenarios.Parse("t.yaml", []byte("name: t\nlock: mysql-get-lock\nclients: 1\nduration: 1s\nserver: "+tt.server+"\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("server: %s: got %v, want an error containing %q", tt.server, err, tt.want)
		}
	}
	_, err := scenarios.Parse("t.yaml", []byte("name: t\nlock: mysql-get-lock\nclients: 1\nduration: 1s\nnodes: 3\n"))
	if err == nil || !strings.Contains(err.Error(), "nodes: the MariaDB service is one server") {
		t.Errorf("nodes: 3: got %v", err)
	}
}

// BenchmarkStart measures a start of a fresh server (empty data folder) until it answers
// queries, and its memory then:
//
//	go test -run '^$' -bench Start -benchtime 5x ./services/mariadb/
func BenchmarkStart(b *testing.B) {
	var rss float64
	for b.Loop() {
		top, _ := start(b, "")
		b.StopTimer()
		rss += float64(groupRSS(top.Targets()[mariadb.Node].(pider).Pid()))
		_ = top.Stop()
		b.StartTimer()
	}
	b.ReportMetric(rss/float64(b.N)/(1<<20), "RSS-MB")
}

func mustExec(t *testing.T, db *sql.DB, stmt string) {
	t.Helper()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
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
