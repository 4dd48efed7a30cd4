package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A new user's first five minutes, exactly: go install the binary into an empty GOBIN (from this
// checkout, as `go install github.com/lockcheck/lockcheck/cmd/lockcheck@VERSION` does from the
// module proxy), then, in an empty folder with an empty cache, run a shipped scenario by name,
// then `lockcheck init --lang python` and the command it prints. Each reaches the verdict the
// README documents.
func TestInstalledBinaryWorksFromAnEmptyFolder(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	gobin := filepath.Join(tmp, "gobin")
	install := exec.Command("go", "install", "./cmd/lockcheck")
	install.Dir = root
	// An empty GOPATH and GOBIN; the module cache is shared so that nothing is downloaded again.
	install.Env = append(os.Environ(), "GOBIN="+gobin, "GOPATH="+filepath.Join(tmp, "gopath"), "GOMODCACHE="+goEnv(t, "GOMODCACHE"), "GOFLAGS=-mod=mod")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}

	empty := filepath.Join(tmp, "project")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"), "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"))
	run := func(command string) (string, int) {
		t.Helper()
		args := strings.Fields(command)
		cmd := exec.Command(filepath.Join(gobin, args[0]), args[1:]...)
		cmd.Dir, cmd.Env = empty, env
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(err)
	}

	// The README's example: K2 on SET NX PX, found by name among the shipped scenarios.
	out, code := run("lockcheck run k2-set-nx-px")
	if code != exitMatch {
		t.Fatalf("lockcheck run k2-set-nx-px from an empty folder: exit %d\n%s", code, out)
	}
	for _, want := range []string{"scenario k2-set-nx-px (K2, A1, K5)", "mutual exclusion  VIOLATED", "verdict matches expect:", "unfenced lost"} {
		if !strings.Contains(out, want) {
			t.Errorf("lockcheck run k2-set-nx-px: no %q in\n%s", want, out)
		}
	}

	// A wrong name gets the nearest ones.
	out, code = run("lockcheck run k2-set-nx-pxx")
	if code != exitHarness || !strings.Contains(out, "nearest shipped scenarios: debate/k2-set-nx-px") {
		t.Errorf("a misspelt name: exit %d\n%s", code, out)
	}

	// The starter set, and the command it prints.
	out, code = run("lockcheck init --lang python")
	if code != 0 {
		t.Fatalf("lockcheck init --lang python: exit %d\n%s", code, out)
	}
	next := ""
	for _, line := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(line, "next: "); ok {
			next = c
		}
	}
	if !strings.HasPrefix(next, "lockcheck run ") {
		t.Fatalf("lockcheck init prints no next command:\n%s", out)
	}
	out, code = run(next)
	if code != exitMatch || !strings.Contains(out, "verdict matches expect: mutual exclusion held") || !strings.Contains(out, "lock my-lock") {
		t.Fatalf("%s: exit %d, want the control's verdict to match:\n%s", next, code, out)
	}
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// make run's binary: built with -tags quickstart it leaves out the modules that only other service
// kinds, the docker provider and the report's plots need (most of a fresh build's time), still
// reaches the README's verdict, draws a report page that says how to get the plots, and answers a
// scenario it cannot run with how to build the whole lockcheck.
func TestQuickstartBuildRunsTheFirstScenarioAndNamesWhatItLacks(t *testing.T) {
	bin := quickstartLockcheck(t)
	mods, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, heavy := range []string{"go.etcd.io/etcd", "google.golang.org/grpc", "github.com/testcontainers", "github.com/moby/moby",
		"github.com/jackc/pgx", "github.com/go-zookeeper/zk", "github.com/go-sql-driver/mysql", "gonum.org/v1/plot"} {
		if strings.Contains(string(mods), "\tdep\t"+heavy) {
			t.Errorf("the quick-start binary links %s", heavy)
		}
	}
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(err)
	}
	results := t.TempDir()
	out, code := run("run", "--results", results, "scenarios/debate/k2-set-nx-px.yaml")
	if code != exitMatch || !strings.Contains(out, "mutual exclusion  VIOLATED") {
		t.Fatalf("make run's scenario on the quick-start build: exit %d\n%s", code, out)
	}
	pages, _ := filepath.Glob(filepath.Join(results, "*", "*", "report.html"))
	if len(pages) != 1 {
		t.Fatalf("want one report.html under %s, found %v", results, pages)
	}
	if page, err := os.ReadFile(pages[0]); err != nil || !strings.Contains(string(page), "./bin/lockcheck report RUN_FOLDER</code>, draws them") {
		t.Errorf("the quick-start report page should say how to draw the plots it leaves out (read error %v)", err)
	}
	const hint = "make build builds every lock, service kind and provider"
	lacking := [][]string{
		{"run", "scenarios/debate/k2-etcd.yaml"},
		{"run", "--provider", "docker", "scenarios/debate/k2-set-nx-px.yaml"},
		{"images"},
	}
	for _, args := range lacking {
		out, code := run(args...)
		if code != exitHarness || !strings.Contains(out, hint) {
			t.Errorf("lockcheck %s on the quick-start build: exit %d, want %d and %q:\n%s", strings.Join(args, " "), code, exitHarness, hint, out)
		}
	}
}
