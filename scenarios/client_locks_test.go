package scenarios

import (
	"path/filepath"
	"strings"
	"testing"
)

const mixed = `name: x
lock: zk@v1.0.2
clients: 4
client_locks: {client-3: kazoo, client-4: kazoo}
ttl: 2s
duration: 2s
`

func TestClientLocksGiveClientsTheirDesigns(t *testing.T) {
	s, err := Parse("x.yaml", []byte(mixed))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"client-1": "zk@v1.0.2", "client-2": "zk@v1.0.2", "client-3": "kazoo", "client-4": "kazoo"}
	for c, d := range want {
		if got := s.LockOf(c); got != d {
			t.Errorf("%s runs %q, want %q", c, got, d)
		}
	}
	if got := s.ClientLockNames(); len(got) != 4 || got["client-3"] != "kazoo" {
		t.Errorf("ClientLockNames = %v", got)
	}
	if got, want := s.LockDescription(), "zk@v1.0.2 (client-1, client-2) + kazoo (client-3, client-4)"; got != want {
		t.Errorf("LockDescription = %q, want %q", got, want)
	}
	if n := len(s.Designs()); n != 2 {
		t.Errorf("%d designs, want 2", n)
	}
	if s.DesignOf("client-3").Program != nil || s.DesignOf("client-1").Prepare == nil {
		t.Error("kazoo is registered (no program in the worker config); zk@v1.0.2 is built before the run")
	}

	plain, err := Parse("x.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Mixed() || plain.ClientLockNames() != nil || plain.LockDescription() != "set-nx-px" {
		t.Errorf("a scenario without client_locks is not mixed: %v %q", plain.ClientLockNames(), plain.LockDescription())
	}
}

func TestClientLocksMustMeetOnOneLock(t *testing.T) {
	cases := []struct {
		name, lock, clientLocks string
		want                    []string
	}{
		{"no such client", "zk", "{client-9: kazoo}", []string{"x.yaml:4: client_locks.client-9: no such client; this scenario has: client-1"}},
		{"unknown design", "zk", "{client-2: kazooo}", []string{"x.yaml:4: client_locks.client-2:", `unknown lock "kazooo"`}},
		{"unknown library at a version", "zk", "{client-2: jedis@v3.0.0}", []string{"client_locks.client-2:", "redsync, etcd, etcd-unchecked, zk"}},
		{
			"another service",
			"zk",
			"{client-2: set-nx-px}",
			[]string{"client_locks.client-2: set-nx-px runs on redis, the scenario's lock zk on zookeeper"},
		},
		{
			"another node count",
			"set-nx-px",
			"{client-2: redsync}",
			[]string{"client_locks.client-2: redsync uses 5 node(s), the scenario's lock set-nx-px 1"},
		},
		{
			"a read/write lock beside a mutex",
			"zk",
			"{client-2: zk-rw}",
			[]string{"client_locks.client-2: zk-rw and the scenario's lock zk are not both"},
		},
		{"tokens of two kinds", "set-nx-px", "{client-2: redisson-fenced}",
			[]string{"client_locks.client-2: redisson-fenced's fencing token", "the fenced registers cannot order them"}},
		{"tokens of two kinds among the clients", "redis-py", "{client-1: set-nx-px, client-2: redisson-fenced}",
			[]string{"client_locks.client-2: redisson-fenced's fencing token", "is not of the kind of set-nx-px's"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.NewReplacer("lock: zk@v1.0.2", "lock: "+c.lock, "{client-3: kazoo, client-4: kazoo}", c.clientLocks).Replace(mixed)
			_, err := Parse("x.yaml", []byte(src))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// A design without a token beside one with tokens is fine: its clients leave the fenced
	// registers alone.
	src := strings.NewReplacer("lock: zk@v1.0.2", "lock: set-nx-px", "{client-3: kazoo, client-4: kazoo}", "{client-2: redis-py}").Replace(mixed)
	if _, err := Parse("x.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
}

// Every track-record scenario loads, and is named after its file.
func TestTrackRecordScenariosLoad(t *testing.T) {
	files, _ := filepath.Glob("track-record/*.yaml")
	if len(files) < 8 {
		t.Fatalf("expected the track record here, found %v", files)
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if s.Name+".yaml" != filepath.Base(f) {
			t.Errorf("%s: name %q does not match the file name", f, s.Name)
		}
	}
}
