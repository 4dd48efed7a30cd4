package external

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/internal/yamlpos"
	"go.yaml.in/yaml/v3"
)

// Actions a hook may be given for, by their names in an endpoints file; they are the actions a
// fault asks of a server (providers.Refuser). "cut" is a partition's reset mode (connections
// fail), "drop" its drop mode (packets vanish); "heal" undoes either.
var Actions = []string{"pause", "resume", "kill", "restart", "clock", "cut", "drop", "heal"}

// Endpoints is an endpoints file: the user's nodes by the names a scenario's service gives them
// (n1.., s1.., zk1..), and the hook commands that carry out server faults.
type Endpoints struct {
	Path  string
	Nodes map[string]NodeEndpoints
	// Hooks are the default hook of each action, for every node without its own.
	Hooks map[string]string
}

// NodeEndpoints is one node of the user's cluster.
type NodeEndpoints struct {
	// Ports are where lockcheck reaches each of the node's ports (by the service's port names:
	// client, sentinel, ...), host:port.
	Ports map[string]string `yaml:"ports"`
	// Advertised are the addresses the servers themselves know the ports by (what a Sentinel
	// reports), when not the same as Ports.
	Advertised map[string]string `yaml:"advertised"`
	// Hooks override the file's default hooks for this node.
	Hooks map[string]string `yaml:"hooks"`
}

// file is an endpoints file as written.
type file struct {
	Nodes map[string]NodeEndpoints `yaml:"nodes"`
	Hooks map[string]string        `yaml:"hooks"`
}

// Load reads and checks an endpoints file. Errors name the file, the line and the field.
func Load(path string) (*Endpoints, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("endpoints file: %w", err)
	}
	return Parse(path, src)
}

// Parse is Load on text already read.
func Parse(path string, src []byte) (*Endpoints, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", path, strings.TrimPrefix(yamlpos.Relined(src, err).Error(), "yaml: "))
	}
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		var te *yaml.TypeError
		msgs := []string{err.Error()}
		if ok := asTypeError(err, &te); ok {
			msgs = te.Errors
		}
		var out []string
		for _, m := range msgs {
			if line, msg, ok := yamlpos.LineOf(m); ok {
				out = append(out, fmt.Sprintf("%s:%d: %s", path, line, msg))
			} else {
				out = append(out, fmt.Sprintf("%s: %s", path, strings.TrimPrefix(m, "yaml: ")))
			}
		}
		return nil, fmt.Errorf("%s; an endpoints file has nodes: (name: {ports: {port: host:port}, advertised:, hooks:}) and hooks: (%s)",
			strings.Join(out, "\n"), strings.Join(Actions, ", "))
	}
	lines := yamlpos.New(&root)
	var problems []string
	bad := func(field, format string, a ...any) {
		loc := path
		if l := lines.Line(field); l > 0 {
			loc += ":" + strconv.Itoa(l)
		}
		problems = append(problems, fmt.Sprintf("%s: %s: %s", loc, field, fmt.Sprintf(format, a...)))
	}
	if len(f.Nodes) == 0 {
		bad("nodes", "no nodes: name each server of your cluster with the name the scenario's service gives it (n1.., s1.., zk1..) and its ports")
	}
	checkHooks := func(prefix string, hooks map[string]string) {
		for _, a := range slices.Sorted(maps.Keys(hooks)) {
			if !slices.Contains(Actions, a) {
				bad(prefix+"."+a, "no such action; hooks can be given for: %s", strings.Join(Actions, ", "))
			} else if strings.TrimSpace(hooks[a]) == "" {
				bad(prefix+"."+a, "empty command")
			}
		}
	}
	checkHooks("hooks", f.Hooks)
	for _, name := range slices.Sorted(maps.Keys(f.Nodes)) {
		n := f.Nodes[name]
		field := "nodes." + name
		if len(n.Ports) == 0 {
			bad(field+".ports", "no ports: give at least the one clients use, e.g. ports: {client: 10.0.0.5:6379}")
		}
		for _, group := range []struct {
			field string
			m     map[string]string
		}{{".ports", n.Ports}, {".advertised", n.Advertised}} {
			for _, port := range slices.Sorted(maps.Keys(group.m)) {
				if _, p, err := net.SplitHostPort(group.m[port]); err != nil || p == "" {
					bad(field+group.field+"."+port, "%q is not host:port", group.m[port])
				}
			}
		}
		for _, port := range slices.Sorted(maps.Keys(n.Advertised)) {
			if _, ok := n.Ports[port]; !ok {
				bad(field+".advertised."+port, "no such port in ports (%s)", strings.Join(slices.Sorted(maps.Keys(n.Ports)), ", "))
			}
		}
		checkHooks(field+".hooks", n.Hooks)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return &Endpoints{Path: path, Nodes: f.Nodes, Hooks: f.Hooks}, nil
}

func asTypeError(err error, te **yaml.TypeError) bool {
	t, ok := err.(*yaml.TypeError)
	if ok {
		*te = t
	}
	return ok
}

// Dir is the folder hooks run in: the endpoints file's own, so paths in a hook command are
// relative to the file that names them.
func (e *Endpoints) Dir() string {
	abs, err := filepath.Abs(filepath.Dir(e.Path))
	if err != nil {
		return filepath.Dir(e.Path)
	}
	return abs
}

// Hook returns the command for action on node: the node's own, else the file's default, else "".
func (e *Endpoints) Hook(node, action string) string {
	if h := e.Nodes[node].Hooks[action]; h != "" {
		return h
	}
	return e.Hooks[action]
}

// Names lists the nodes, sorted.
func (e *Endpoints) Names() []string { return slices.Sorted(maps.Keys(e.Nodes)) }
