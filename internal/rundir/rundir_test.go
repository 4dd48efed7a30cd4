package rundir

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Many goroutines asking for a folder at the same instant each get their own.
func TestSameMillisecondGivesDistinctFolders(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "scenario")
	at := time.Date(2026, 11, 21, 22, 32, 34, 742e6, time.Local)
	const n = 20
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dirs[i], errs[i] = New(parent, at) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, d := range dirs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[d] {
			t.Fatalf("folder %s handed out twice", d)
		}
		seen[d] = true
		if !strings.HasPrefix(filepath.Base(d), "20261121T223234.742") {
			t.Errorf("folder %s is not named after its time", d)
		}
	}
	later, err := New(parent, at.Add(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	names := append([]string{}, dirs...)
	names = append(names, later)
	sort.Strings(names)
	if names[len(names)-1] != later {
		t.Errorf("a later folder does not sort last: %v", names)
	}
}

// Concurrent Links leave a link that points at one of the targets and no temporary links.
func TestConcurrentLinksLeaveOneValidLink(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(root, "latest")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		target := "run-" + string(rune('a'+i))
		os.Mkdir(filepath.Join(root, target), 0o755)
		wg.Go(func() { errs[i] = Link(link, target) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.Readlink(link)
	if err != nil || !strings.HasPrefix(got, "run-") {
		t.Fatalf("latest -> %q (%v)", got, err)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary link %s left behind", e.Name())
		}
	}
}
