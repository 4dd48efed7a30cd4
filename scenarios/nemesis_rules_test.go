package scenarios

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// base is a scenario with a nemesis list to fill in; {lock} and {nodes} vary per case.
func withNemesis(lock string, nodes int, nemesis string) string {
	return "name: x\nlock: " + lock + "\nnodes: " + string(rune('0'+nodes)) +
		"\nclients: 2\nttl: 1s\nduration: 5s\nnemesis:\n" + nemesis
}

func TestImpossibleSchedulesAreRefusedNamingTheLine(t *testing.T) {
	cases := []struct {
		name, lock string
		nodes      int
		nemesis    string
		want       []string
	}{
		{"pause of a node that does not exist", "set-nx-px", 1,
			"  - {fault: pause, target: n4, at: 1s, for: 1s}\n",
			[]string{"x.yaml:8: nemesis[0].target:", `no such target "n4"`, "n1"}},
		{"clock fault on a ZooKeeper node", "zk", 3,
			"  - {fault: clock, target: zk2, at: 1s, offset: 5s}\n",
			[]string{"x.yaml:8: nemesis[0].target:", "skew a client's clock instead"}},
		{"strobe on a ZooKeeper node", "zk", 3,
			"  - {fault: strobe, target: zk1, at: 1s, offset: 5s, period: 1s, for: 3s}\n",
			[]string{"x.yaml:8: nemesis[0].target:", "skew a client's clock instead"}},
		{"strobe on a client", "set-nx-px", 1,
			"  - {fault: strobe, target: client-1, at: 1s, offset: 5s, period: 1s}\n",
			[]string{"nemesis[0].target:", "client-1 is a client"}},
		{"strobe faster than libfaketime reads", "set-nx-px", 1,
			"  - fault: strobe\n    target: n1\n    at: 1s\n    offset: 5s\n    period: 200ms\n",
			[]string{"x.yaml:12: nemesis[0].period:", "once a second"}},
		{"strobe without period or offset", "set-nx-px", 1,
			"  - {fault: strobe, target: n1, at: 1s}\n",
			[]string{"nemesis[0].period: a strobe needs a period", "nemesis[0].offset: a strobe needs an offset"}},
		{"period on a pause", "set-nx-px", 1,
			"  - {fault: pause, target: n1, at: 1s, for: 1s, period: 1s}\n",
			[]string{"nemesis[0].period:", "period does not apply to a pause fault (it takes for)"}},
		{"a server's fault at a server's point", "set-nx-px", 1,
			"  - {fault: clock, target: n1, point: after-acquire, offset: 5s}\n",
			[]string{"x.yaml:8: nemesis[0].point:", "n1 is a server (by: CLIENT starts a fault on it"}},
		{"by a server", "set-nx-px", 1,
			"  - {fault: clock, target: n1, by: n1, point: after-acquire, offset: 5s}\n",
			[]string{"x.yaml:8: nemesis[0].by:", `"n1" is not a client`}},
		{"by without a point", "set-nx-px", 1,
			"  - {fault: clock, target: n1, by: client-1, at: 1s, offset: 5s}\n",
			[]string{"x.yaml:8: nemesis[0].by:", "give point too"}},
		{"two faults at one client's pass", "set-nx-px", 1,
			"  - {fault: clock, target: n1, by: client-1, point: after-acquire, offset: 5s}\n  - {fault: pause, target: client-1, point: after-acquire, for: 1s}\n",
			[]string{"x.yaml:9: nemesis[1].occurrence:", "already acts on client-1 at pass 1 of after-acquire"}},
		{"partition to nodes that do not exist", "redlock", 5,
			"  - {fault: partition, target: client-1, nodes: [n2, n6], at: 1s}\n",
			[]string{"x.yaml:8: nemesis[0].nodes:", `no such link "n6"`}},
		{"quorum cut from a server that is not a peer", "zk", 3,
			"  - {fault: partition, target: zk1, nodes: [zk2, zk4], at: 1s, for: 1s}\n",
			[]string{"x.yaml:8: nemesis[0].nodes:", `no such peer "zk4"`, "zk2, zk3"}},
		{"partition in an unknown mode", "zk", 3,
			"  - {fault: partition, target: zk1, mode: blackhole, at: 1s, for: 1s}\n",
			[]string{"x.yaml:8: nemesis[0].mode:", `unknown mode "blackhole"; valid modes: reset, drop`}},
		{"quorum cut from itself", "zk", 3,
			"  - {fault: partition, target: zk1, nodes: [zk1], at: 1s}\n",
			[]string{"nemesis[0].nodes:", "cut from itself"}},
		{"quorum cut of a standalone server", "zk", 1,
			"  - {fault: partition, target: zk1, at: 1s}\n",
			[]string{"nemesis[0].target:", "zk1 has no links to other servers to cut"}},
		{"partition of a standalone server's leader", "zk", 1,
			"  - {fault: partition, target: leader, at: 1s}\n",
			[]string{"nemesis[0].target:", "leader has no links to other servers to cut"}},
		{"partition of a Redis node", "set-nx-px", 1,
			"  - {fault: partition, target: n1, at: 1s}\n",
			[]string{"nemesis[0].target:", "target a client and list n1 in nodes"}},
		{"kill with a length", "set-nx-px", 1,
			"  - {fault: kill, target: client-1, at: 1s, for: 1s}\n",
			[]string{"nemesis[0].for:", "kill is instant"}},
		{"two faults at one pass of one point", "set-nx-px", 1,
			"  - {fault: pause, target: client-1, point: after-acquire, for: 1s}\n  - {fault: kill, target: client-1, point: after-acquire, occurrence: 1}\n",
			[]string{"x.yaml:9: nemesis[1].occurrence:", "nemesis[0] already acts"}},
		{"random kill of a server", "set-nx-px", 1,
			"  - random: {faults: [kill], targets: [n1], interval: 1s, min_for: 100ms, max_for: 1s}\n",
			[]string{"x.yaml:8: nemesis[0].random.targets:", "none of the targets can take a kill (clients only)"}},
		{"random crash of clients only", "set-nx-px", 1,
			"  - random: {faults: [pause, crash], targets: [client-1], interval: 1s, min_for: 100ms, max_for: 1s}\n",
			[]string{"nemesis[0].random.targets:", "can take a crash (servers only)"}},
		{"random target that takes none of the faults", "set-nx-px", 1,
			"  - random: {faults: [kill], targets: [client-1, n1], interval: 1s, min_for: 100ms, max_for: 1s}\n",
			[]string{"nemesis[0].random.targets:", "n1 takes none of the listed faults (kill)"}},
		{"random clock without max_offset", "set-nx-px", 1,
			"  - random: {faults: [clock], targets: [client-1], interval: 1s, min_for: 100ms, max_for: 1s}\n",
			[]string{"nemesis[0].random.max_offset:", "max_offset: 2s"}},
		{"random delay without max_latency", "set-nx-px", 1,
			"  - random: {faults: [delay], targets: [client-1], interval: 1s, min_for: 100ms, max_for: 1s}\n",
			[]string{"nemesis[0].random.max_latency:"}},
		{"max_offset without clock faults", "set-nx-px", 1,
			"  - random: {faults: [pause], targets: [client-1], interval: 1s, min_for: 100ms, max_for: 1s, max_offset: 1s}\n",
			[]string{"nemesis[0].random.max_offset:", "clock faults"}},
		{"random clock on ZooKeeper servers", "zk", 3,
			"  - random: {faults: [clock], targets: [zk1], interval: 1s, min_for: 100ms, max_for: 1s, max_offset: 1s}\n",
			[]string{"nemesis[0].random.targets:", "can take a clock (clients and servers whose clock can be set)"}},
		{"random strobe", "set-nx-px", 1,
			"  - random: {faults: [strobe], targets: [n1], interval: 1s, min_for: 100ms, max_for: 1s}\n",
			[]string{"nemesis[0].random.faults:", `got "strobe"`}},
		// A fault kind decodes its own fields: errors name the field and the line, an unknown one
		// lists what the kind takes.
		{"misspelt parameter", "set-nx-px", 1,
			"  - fault: delay\n    target: client-1\n    at: 1s\n    latncy: 1s\n",
			[]string{
				"x.yaml:11: nemesis[0].latncy: unknown field latncy; a delay fault takes: fault, target, at, point, occurrence, by, for, nodes, latency, jitter, until",
			}},
		{"parameter of the wrong type", "set-nx-px", 1,
			"  - {fault: clock, target: client-1, at: 1s, rate: fast}\n",
			[]string{"x.yaml:8: nemesis[0].rate: cannot unmarshal !!str `fast` into float64"}},
		{"parameter that is not a duration", "set-nx-px", 1,
			"  - fault: clock\n    target: client-1\n    at: 1s\n    offset: soon\n",
			[]string{"x.yaml:11: nemesis[0].offset:", `"soon" is not a duration`}},
		{"misspelt kind field", "set-nx-px", 1,
			"  - {fualt: pause, target: client-1, at: 1s, for: 1s}\n",
			[]string{"x.yaml:8: nemesis[0].fualt: unknown field fualt; a fault takes fault, target, at, point, occurrence, by, for"}},
		{"a fault's field on a random package", "set-nx-px", 1,
			"  - random: {faults: [pause], targets: [client-1], interval: 1s, min_for: 100ms, max_for: 1s}\n    offset: 1s\n",
			[]string{"x.yaml:9: nemesis[0].offset: unknown field offset; a random package's fields go under random:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(withNemesis(c.lock, c.nodes, c.nemesis)))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestPossibleSchedulesLoad(t *testing.T) {
	for name, c := range map[string]struct {
		lock    string
		nodes   int
		nemesis string
	}{
		"strobe":                        {"set-nx-px", 1, "  - {fault: strobe, target: n1, at: 1s, offset: 5s, period: 1s, for: 3s}\n"},
		"clock step at a client's pass": {"set-nx-px", 1, "  - {fault: clock, target: n1, by: client-1, point: after-acquire, occurrence: 2, offset: 5s}\n"},
		"quorum cut":                    {"zk", 3, "  - {fault: partition, target: zk1, nodes: [zk2, zk3], at: 1s, for: 2s}\n"},
		"quorum cut all":                {"zk", 3, "  - {fault: partition, target: zk3, at: 1s, for: 2s}\n"},
		"leader cut off":                {"zk", 3, "  - {fault: partition, target: leader, at: 1s, for: 2s}\n"},
		"random mixed": {"redlock", 5, "  - random: {faults: [pause, kill, clock, crash, partition, delay], targets: [client-1, client-2, n1, n2]," +
			" interval: 1s, min_for: 100ms, max_for: 1s, max_offset: 2s, max_latency: 300ms}\n"},
	} {
		if _, err := Parse("x.yaml", []byte(withNemesis(c.lock, c.nodes, c.nemesis))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestRandomTargetsSuitEachKind(t *testing.T) {
	s, err := Parse("x.yaml", []byte(withNemesis("redlock", 5, "  - random: {faults: [pause, kill, clock, crash, partition, delay],"+
		" targets: [client-1, n1], interval: 1s, min_for: 100ms, max_for: 1s, max_offset: 2s, max_latency: 300ms}\n")))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Nemesis[0].Random.ByKind
	want := map[string][]string{
		"pause": {"client-1", "n1"}, "kill": {"client-1"}, "clock": {"client-1", "n1"},
		"crash": {"n1"}, "partition": {"client-1"}, "delay": {"client-1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("targets by kind = %v, want %v", got, want)
	}
}

func TestEveryDebateScenarioLoads(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("debate", "*.yaml"))
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
