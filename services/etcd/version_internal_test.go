package etcd

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/providers"
)

// memberFlags, which each built version's --help is checked against, must name every flag the
// members are started with.
func TestMemberFlagsNameEveryFlagOfTheCommand(t *testing.T) {
	c := &Cluster{names: []string{"n1", "n2"}, doors: newDoorways(), binary: "etcd",
		settings: Settings{ElectionTimeout: yamltime.Duration(DefaultElectionTimeout), Heartbeat: yamltime.Duration(DefaultHeartbeat)}}
	addr := func(to, port string) (string, error) { return "127.0.0.1:9", nil }
	pl := providers.Placement{Host: "127.0.0.1", Ports: map[string]int{ClientPort: 1, PeerPort: 2}, Dir: "/node",
		HostDir: t.TempDir(), Peer: addr, Direct: addr}
	argv, err := c.command("n1", pl)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range memberFlags {
		known[f] = true
	}
	seen := 0
	for _, a := range argv {
		if strings.HasPrefix(a, "--") {
			seen++
			if !known[a] {
				t.Errorf("members are started with %s, which memberFlags does not list", a)
			}
		}
	}
	if seen != len(memberFlags) {
		t.Errorf("the command passes %d flags, memberFlags lists %d", seen, len(memberFlags))
	}
}
