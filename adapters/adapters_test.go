package adapters

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Every adapter is written out once per version, even when every client of a run asks at once,
// and the Java one is compiled there; the variants of one program share its folder.
func TestCommandWritesOutAndBuildsOnce(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	builds := map[string]bool{}
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
		builds[registry[name].build] = true
	}
	entries, err := os.ReadDir(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "lockcheck", "adapters"))
	if err != nil {
		t.Fatal(err)
	}
	folders := map[string][]string{}
	folder := regexp.MustCompile(`^(.+)-[0-9a-f]{12}$`)
	for _, e := range entries {
		if m := folder.FindStringSubmatch(e.Name()); e.IsDir() && m != nil {
			folders[m[1]] = append(folders[m[1]], e.Name())
		} else if e.IsDir() {
			t.Errorf("a folder left over: %s", e.Name())
		}
	}
	for b := range builds {
		if len(folders[b]) != 1 {
			t.Fatalf("%s: want one folder (no leftovers), got %v", b, folders[b])
		}
	}
	if len(folders) != len(builds) {
		t.Fatalf("want one folder per program %v, got %v", builds, folders)
	}
	jar := filepath.Join(os.Getenv("XDG_CACHE_HOME"), "lockcheck", "adapters", folders["curator"][0], curatorJar)
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("curator not compiled: %v", err)
	}
}

func TestUnknownAdapter(t *testing.T) {
	if _, err := Command("jedis"); err == nil ||
		!strings.Contains(
			err.Error(),
			"adapters: curator, curator-rw, curator-rw-downgrade, kazoo, kazoo-rw, kazoo-try, redis-py, redis-py-no-timeout, redis-py-reacquire",
		) {
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
