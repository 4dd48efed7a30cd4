package adapters

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Every adapter is written out once per version, even when every client of a run asks at once,
// and the Java one is compiled there.
func TestCommandWritesOutAndBuildsOnce(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, name := range Names() {
		if err := Check(name); err != nil {
			t.Fatal(err) // scripts/install-deps.sh installs what every adapter needs
		}
		var wg sync.WaitGroup
		cmds := make([][]string, 4)
		errs := make([]error, 4)
		for i := range cmds {
			wg.Add(1)
			go func() { defer wg.Done(); cmds[i], errs[i] = Command(name) }()
		}
		wg.Wait()
		for i := range cmds {
			if errs[i] != nil {
				t.Fatalf("%s: %v", name, errs[i])
			}
			if strings.Join(cmds[i], " ") != strings.Join(cmds[0], " ") {
				t.Fatalf("%s: different commands for the same version: %q, %q", name, cmds[0], cmds[i])
			}
		}
		folders, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "lockcheck", "adapters", name+"*"))
		var dirs []string
		for _, f := range folders {
			if st, err := os.Stat(f); err == nil && st.IsDir() {
				dirs = append(dirs, f)
			}
		}
		if len(dirs) != 1 {
			t.Fatalf("%s: want one folder (no leftovers), got %v", name, dirs)
		}
		if name == "curator" {
			if _, err := os.Stat(filepath.Join(dirs[0], "CuratorLock.class")); err != nil {
				t.Fatalf("curator not compiled: %v", err)
			}
		}
	}
}

func TestUnknownAdapter(t *testing.T) {
	if _, err := Command("jedis"); err == nil || !strings.Contains(err.Error(), "adapters: curator, kazoo, redis-py") {
		t.Fatalf("want the adapters listed, got %v", err)
	}
}

// docs/LOCK-PROTOCOL.md shows the example adapter as it is in adapters/example_lock.py (which
// runner/byol_test.go runs).
func TestProtocolDocShowsTheExampleAdapter(t *testing.T) {
	doc, err := os.ReadFile("../docs/LOCK-PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_lock.py")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```python\n"+string(example)+"```\n") {
		t.Fatal("docs/LOCK-PROTOCOL.md does not show adapters/example_lock.py as it is")
	}
	if n := strings.Count(string(example), "\n"); n > 32 {
		t.Fatalf("the example adapter has grown to %d lines", n)
	}
}
