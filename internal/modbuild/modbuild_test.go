package modbuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// go's first error line is what a failure names, not its progress lines or the echoed commands.
func TestFirstErrorSkipsProgress(t *testing.T) {
	out := "$ go get go.etcd.io/etcd@v3.4.3+incompatible\ngo: downloading go.etcd.io/etcd v0.0.0-x\n" +
		"# go.etcd.io/etcd/pkg\n\ngo: go.etcd.io/etcd@v3.4.3+incompatible: reading https://proxy.golang.org/...: 403 Forbidden\nmore\n"
	if got := firstError(out, errors.New("exit status 1")); !strings.HasPrefix(got, "go: go.etcd.io/etcd@v3.4.3+incompatible: reading") {
		t.Fatalf("first error %q", got)
	}
	if got := firstError("go: downloading x\n", errors.New("exit status 1")); got != "exit status 1" {
		t.Fatalf("no error line: got %q, want the exit status", got)
	}
}

// A version the module proxy refuses fails in one line that names the module, the version and
// go's error, and leaves no binary and no build folder behind. (It asks the real proxy: the 3.4
// tags of etcd are refused there as +incompatible versions.)
func TestRefusedVersionIsNamed(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := Program{Name: "etcd", Module: "go.etcd.io/etcd", Version: "v3.4.3+incompatible", Package: "go.etcd.io/etcd", Folder: "etcd-x"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := Ensure(ctx, p, nil)
	if err == nil {
		t.Fatal("want an error: the proxy refuses go.etcd.io/etcd@v3.4.3+incompatible")
	}
	msg := err.Error()
	for _, w := range []string{"build go.etcd.io/etcd@v3.4.3+incompatible: go get:", "go.etcd.io/etcd@v3.4.3+incompatible", "etcd-x.build.log"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("want one line, got %q", msg)
	}
	t.Logf("%s", msg)
	if Built(p) {
		t.Fatal("a binary was left behind")
	}
	if left, _ := filepath.Glob(filepath.Join(Root(), ".etcd-x.build-*")); len(left) > 0 {
		t.Fatalf("build folders left behind: %v", left)
	}
}

// Concurrent runs build once: while another process holds the build lock, Ensure waits, and
// when that process has put the binary in place, Ensure returns it without building.
func TestEnsureWaitsForAnotherBuild(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("PATH", "") // a build here would fail at once: no go
	p := Program{Name: "tool", Module: "example.com/tool", Version: "v1.0.0", Package: "example.com/tool", Folder: "tool-1"}
	if err := os.MkdirAll(Root(), 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(Root(), p.Folder+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	type result struct {
		path string
		err  error
	}
	done := make(chan result, 1)
	go func() { path, err := Ensure(context.Background(), p, nil); done <- result{path, err} }()
	select {
	case r := <-done:
		t.Fatalf("Ensure did not wait for the lock: %v %v", r.path, r.err)
	case <-time.After(500 * time.Millisecond):
	}
	// The other "process" finishes its build.
	if err := os.MkdirAll(filepath.Dir(Path(p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(p), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	select {
	case r := <-done:
		if r.err != nil || r.path != Path(p) {
			t.Fatalf("after the other build: %q, %v; want %s", r.path, r.err, Path(p))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ensure still waiting after the lock was released")
	}
}
