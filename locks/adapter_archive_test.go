package locks

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/adapters"
)

// The first Curator clients on a machine wait while a training client of their own makes the
// client's class-data archive on a key of its own, then map it; the run's key is untouched by the
// training (the first acquire of it is granted), and the lock works as before.
func TestTheFirstCuratorClientsMakeTheClassArchiveThatTheyThenMap(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // a machine without the archive
	archive, _, ok := adapters.Archive("curator")
	if !ok {
		t.Fatal("curator has no class-data archive")
	}
	if archive.Flags() != nil {
		t.Fatalf("an archive before any client: %s", archive.Path())
	}
	zk := StartTestService(t, TestServiceSpec{Design: "curator", Nodes: 1}).Direct["zk1"]
	d, err := Get("curator")
	if err != nil {
		t.Fatal(err)
	}
	key := "archive-test"
	clients := make([]Lock, 3)
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i := range clients { // every client of a run starts at once
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i], errs[i] = d.New(Env{Client: "client-" + string(rune('1'+i)), Nodes: []string{zk}, Key: key,
				TTL: 2 * time.Second, Timeout: 2 * time.Second, Point: func(string) {}})
		}()
	}
	wg.Wait()
	for i, l := range clients {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		defer l.Close()
	}
	st, err := os.Stat(archive.Path())
	if err != nil || st.Size() < 1<<20 {
		t.Fatalf("no archive after the first clients started: %v", err)
	}
	for i, l := range clients {
		x := l.(externalValid).external
		if !slices.Contains(x.cmd.Args, "-XX:SharedArchiveFile="+archive.Path()) {
			t.Errorf("client-%d does not map the archive: %s", i+1, strings.Join(x.cmd.Args, " "))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := clients[0].Acquire(ctx); err != nil {
		t.Fatalf("the run's key after the training: %v", err)
	}
	if err := clients[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
}
