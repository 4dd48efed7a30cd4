package scenarios

import (
	"reflect"
	"strings"
	"testing"
)

const failoverScenario = `name: f
lock: set-nx-px
replicas: 1
clients: 2
ttl: 1s
duration: 3s
nemesis:
  - {fault: partition, target: n2, at: 0s}
  - {fault: crash, target: primary, at: 1s, for: 5s}
`

func TestFailoverScenarioLoads(t *testing.T) {
	s, err := Parse("f.yaml", []byte(failoverScenario))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Plan().Servers, ","); got != "n1,n2,s1,s2,s3" {
		t.Errorf("servers %q, want the primary, its replica and three sentinels", got)
	}
	if got := strings.Join(s.NodeNames(), ","); got != "n1" {
		t.Errorf("lock nodes %q, want n1", got)
	}
	for _, target := range []string{"n1", "n2", "s1", "s3", "primary"} {
		if _, ok := s.Plan().Target(target); !ok {
			t.Errorf("%s is not a target", target)
		}
	}
}

func TestFailoverErrorsNameTheLine(t *testing.T) {
	cases := []struct {
		name    string
		replace [2]string
		want    []string
	}{
		{"a multi-node design", [2]string{"lock: set-nx-px", "lock: redlock"},
			[]string{"f.yaml:3: replicas:", "single-node design"}},
		{"a ZooKeeper design", [2]string{"lock: set-nx-px", "lock: zk"},
			[]string{"f.yaml:3: replicas:", "Redis lock nodes only"}},
		{"failover without replicas", [2]string{"replicas: 1\n", ""},
			[]string{"f.yaml:8: nemesis[1].target:", `no such target "primary"`}},
		{"replication cut without replicas", [2]string{"replicas: 1\n", ""},
			[]string{"f.yaml:7: nemesis[0].target:", `no such target "n2"`}},
		{"in the server block", [2]string{"replicas: 1\n", "server: {replicas: 1, sentinels: 9}\n"},
			[]string{"f.yaml:3: server.sentinels:", "between 1 and 7"}},
		{"given twice", [2]string{"replicas: 1\n", "replicas: 1\nserver: {replicas: 2}\n"},
			[]string{"f.yaml:3: replicas:", "given twice"}},
		{"on etcd", [2]string{"lock: set-nx-px", "lock: etcd"},
			[]string{"f.yaml:3: replicas:", "Redis lock nodes only; etcd runs on etcd"}},
		{"sentinels without replicas", [2]string{"replicas: 1\n", "sentinels: 3\n"},
			[]string{"f.yaml:3: sentinels:", "add replicas"}},
		{"too many sentinels", [2]string{"replicas: 1\n", "replicas: 1\nsentinels: 9\n"},
			[]string{"f.yaml:4: sentinels:", "between 1 and 7"}},
		{"a replication cut naming a sentinel", [2]string{"target: n2, at: 0s", "target: n2, nodes: [s1], at: 0s"},
			[]string{"f.yaml:8: nemesis[0].nodes:", `no such peer "s1"`, "n2's peers: n1"}},
		{"a partition of a sentinel", [2]string{"target: n2, at: 0s", "target: s2, at: 0s"},
			[]string{"f.yaml:8: nemesis[0].target:", "s2 has no links to other servers to cut"}},
		{"a sentinel's clock", [2]string{"{fault: partition, target: n2, at: 0s}", "{fault: clock, target: s1, at: 0s, offset: 1s}"},
			[]string{"f.yaml:8: nemesis[0].target:", "libfaketime"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(failoverScenario, c.replace[0], c.replace[1], 1)
			if src == failoverScenario {
				t.Fatal("replacement did not apply")
			}
			_, err := Parse("f.yaml", []byte(src))
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

// Redis's settings written at the top level, as files did before each kind owned its settings,
// give the same service as the same settings in the server block.
func TestTopLevelRedisSettingsAreTheServerBlocks(t *testing.T) {
	for _, c := range []struct{ old, now string }{
		{"replicas: 1\n", "server: {replicas: 1}\n"},
		{"replicas: 2\nsentinels: 5\npersistence: aof-always\n", "server:\n  replicas: 2\n  sentinels: 5\n  persistence: aof-always\n"},
	} {
		old, err := Parse("old.yaml", []byte(strings.Replace(failoverScenario, "replicas: 1\n", c.old, 1)))
		if err != nil {
			t.Fatal(err)
		}
		now, err := Parse("now.yaml", []byte(strings.Replace(failoverScenario, "replicas: 1\n", c.now, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(old.Plan().Detail, now.Plan().Detail) || !reflect.DeepEqual(old.Plan().Servers, now.Plan().Servers) {
			t.Errorf("%q: plan %+v %v, want %+v %v as from %q", c.old, old.Plan().Detail, old.Plan().Servers, now.Plan().Detail, now.Plan().Servers, c.now)
		}
	}
}
