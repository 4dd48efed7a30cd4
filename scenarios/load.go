package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/resource"
	"github.com/lockcheck/lockcheck/workloads"
)

// Error is a problem with a scenario file, placed at a line and a field.
type Error struct {
	File  string
	Line  int
	Field string // dotted path, e.g. "nemesis[0].target"
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Load reads, decodes and validates a scenario file. Every error names the file, the line and the
// field; several problems are reported together.
func Load(path string) (*Scenario, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, src)
}

// Parse is Load on text already read.
func Parse(path string, src []byte) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, yamlErrors(path, nil, err)
	}
	idx := indexFields(&root)
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true) // a misspelt field is an error, not a silent default
	if err := dec.Decode(&s); err != nil {
		return nil, yamlErrors(path, idx, err)
	}
	s.Path, s.Source = path, src
	s.applyDefaults()
	if errs := s.validate(); len(errs) > 0 {
		for _, e := range errs {
			e.File = path
			e.Line = idx.line(e.Field)
		}
		return nil, joinErrors(errs)
	}
	return &s, nil
}

var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// yamlErrors turns yaml.v3's "line N: ..." messages into Errors that also name the field there.
func yamlErrors(path string, idx fieldIndex, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var errs []*Error
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		e := &Error{File: path, Msg: m}
		if g := lineRE.FindStringSubmatch(m); g != nil {
			e.Line, _ = strconv.Atoi(g[1])
			e.Msg = g[2]
			e.Field = idx.fieldAt(e.Line)
		}
		errs = append(errs, e)
	}
	return joinErrors(errs)
}

func joinErrors(errs []*Error) error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

// fieldIndex maps dotted field paths to the line where each is written, and back.
type fieldIndex map[string]int

func indexFields(root *yaml.Node) fieldIndex {
	idx := fieldIndex{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := n.Content[i].Value
				if path != "" {
					p = path + "." + p
				}
				idx[p] = n.Content[i].Line
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				idx[p] = c.Line
				walk(c, p)
			}
		}
	}
	walk(root, "")
	return idx
}

// line finds the line of a field, or of its nearest written parent (a missing field is reported
// where its parent is).
func (idx fieldIndex) line(field string) int {
	for p := field; p != ""; {
		if l, ok := idx[p]; ok {
			return l
		}
		cut := strings.LastIndexAny(p, ".[")
		if cut < 0 {
			break
		}
		p = p[:cut]
	}
	return 0
}

// fieldAt names the deepest field written on a line.
func (idx fieldIndex) fieldAt(line int) string {
	best := ""
	for p, l := range idx {
		if l == line && len(p) > len(best) {
			best = p
		}
	}
	return best
}

func (s *Scenario) applyDefaults() {
	if d, err := locks.Get(s.Lock); err == nil && s.Nodes == 0 {
		s.Nodes = d.Nodes
	}
	w := &s.Workload
	def := func(d *Duration, v Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&w.AcquireTimeout, Duration(2e9))
	def(&w.BackoffMin, Duration(5e6))
	def(&w.BackoffMax, Duration(20e6))
	def(&w.Timeout, Duration(250e6))
	s.failoverDefaults()
	for i := range s.Nemesis {
		if s.Nemesis[i].Point != "" && s.Nemesis[i].Occurrence == 0 {
			s.Nemesis[i].Occurrence = 1
		}
	}
}

func (s *Scenario) validate() []*Error {
	var errs []*Error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &Error{Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	if s.Name == "" {
		bad("name", "missing: give the scenario a name")
	}
	design, err := locks.Get(s.Lock)
	switch {
	case s.Lock == "":
		bad("lock", "missing; valid locks: %s", strings.Join(locks.Names(), ", "))
	case err != nil:
		bad("lock", "%v", err)
	case s.Nodes < design.Nodes:
		bad("nodes", "%s needs %d node(s), got %d", s.Lock, design.Nodes, s.Nodes)
	}
	switch s.Supports {
	case "", "kleppmann", "antirez", "both", "neither":
	default:
		bad("supports", "%q is not a side; write kleppmann, antirez, both or neither", s.Supports)
	}
	if s.Clients < 1 {
		bad("clients", "need at least 1 client, got %d", s.Clients)
	}
	if s.Duration == 0 {
		bad("duration", "missing: how long the clients run (e.g. 5s)")
	}
	if err == nil && design.Expires && s.TTL == 0 {
		bad("ttl", "%s is a lease: give it a ttl (e.g. 500ms)", s.Lock)
	}
	w := s.Workload
	if w.BackoffMax < w.BackoffMin {
		bad("workload.backoff_max", "%s is below backoff_min %s", w.BackoffMax.D(), w.BackoffMin.D())
	}
	if err == nil && s.Workload.Readers > 0 && !design.ReadWrite {
		bad("workload.readers", "%s is not a read/write lock", s.Lock)
	}
	if s.Workload.Readers > s.Clients {
		bad("workload.readers", "%d readers but only %d clients", s.Workload.Readers, s.Clients)
	}
	if err == nil && s.Workload.Reentrant && !design.Reentrant {
		bad("workload.reentrant", "%s is not reentrant", s.Lock)
	}
	points := workloads.Points
	if err == nil {
		points = append(append([]string(nil), points...), design.Points...)
	}
	targets := s.targets()
	randoms := 0
	for i, f := range s.Nemesis {
		p := fmt.Sprintf("nemesis[%d]", i)
		if f.Random != nil {
			if f.Fault != "" || f.Target != "" || f.Point != "" {
				bad(p, "an entry is either a planned fault or a random package, not both")
			}
			if randoms++; randoms > 1 {
				bad(p+".random", "only one random package per scenario")
			}
			s.validateRandom(p+".random", *f.Random, targets, bad)
			continue
		}
		if !contains(nemesis.Kinds, f.Fault) {
			bad(p+".fault", "unknown fault %q; valid faults: %s", f.Fault, strings.Join(nemesis.Kinds, ", "))
		}
		if !contains(targets, f.Target) && !s.failoverTargetNeedsReplicas(p, f.Target, bad) {
			bad(p+".target", "no such target %q; this scenario has: %s", f.Target, strings.Join(targets, ", "))
		}
		switch {
		case f.Point != "" && f.At != 0:
			bad(p+".point", "give either at (a time) or point (a program point), not both")
		case f.Point != "":
			if !strings.HasPrefix(f.Target, "client-") {
				bad(p+".point", "program points are in clients; %s is a server", f.Target)
			}
			if !contains(points, f.Point) {
				bad(p+".point", "unknown program point %q; valid points for %s: %s", f.Point, s.Lock, strings.Join(points, ", "))
			}
		case f.At.D() >= s.Duration.D() && s.Duration != 0:
			bad(p+".at", "%s is not before the end of the run (%s)", f.At.D(), s.Duration.D())
		}
		if f.Fault == nemesis.PauseFault && f.For == 0 {
			bad(p+".for", "a pause needs a length (e.g. for: 1s)")
		}
		if f.Fault == nemesis.ClockFault {
			if !strings.HasPrefix(f.Target, "client-") && s.Service() == locks.ZooKeeper {
				bad(p+".target", "ZooKeeper under libfaketime spins at full CPU: skew a client's clock instead")
			}
			if f.Offset == 0 && f.Rate == 0 {
				bad(p+".offset", "a clock fault needs an offset (e.g. offset: 2s) or a rate (e.g. rate: 1.1)")
			}
		} else if (f.Offset != 0 || f.Rate != 0) && f.Fault != nemesis.StrobeFault {
			bad(p+".offset", "offset and rate belong to clock faults only")
		}
		if f.Rate < 0 {
			bad(p+".rate", "a clock rate must be positive, got %v", f.Rate)
		}
		isClient := strings.HasPrefix(f.Target, "client-")
		switch f.Fault {
		case nemesis.CrashFault:
			if isClient {
				bad(p+".target", "crash restarts a server; to end a client use kill")
			}
		case nemesis.PartitionFault, nemesis.DelayFault:
			if s.isZKServer(f.Target) && f.Fault == nemesis.PartitionFault {
				s.validateQuorumCut(p, f, bad)
				break
			}
			if s.isReplica(f.Target) && f.Fault == nemesis.PartitionFault {
				s.validateReplicationCut(p, f, bad)
				break
			}
			if !isClient {
				bad(p+".target", "a %s acts on a client's links: target a client and list the nodes (or resource)", f.Fault)
			}
			links := append(append(s.NodeNames(), s.failoverNodeNames()...), "resource")
			for _, node := range f.Nodes {
				if !contains(links, node) {
					bad(p+".nodes", "no such link %q; this scenario has: %s", node, strings.Join(links, ", "))
				}
			}
			if f.Fault == nemesis.DelayFault && f.Latency == 0 {
				bad(p+".latency", "a delay needs a latency (e.g. latency: 1s)")
			}
		case nemesis.KillFault:
			if !isClient {
				bad(p+".target", "kill ends a client; to kill and restart a server use crash")
			}
		}
		if len(f.Nodes) > 0 && f.Fault != nemesis.PartitionFault && f.Fault != nemesis.DelayFault {
			bad(p+".nodes", "nodes belong to partition and delay faults only")
		}
		if (f.Latency != 0 || f.Jitter != 0) && f.Fault != nemesis.DelayFault {
			bad(p+".latency", "latency and jitter belong to delay faults only")
		}
	}
	s.validateFailover(bad)
	s.validateNemesisRules(bad)
	switch s.Persistence {
	case "", "none", "aof-everysec", "aof-always":
		if s.Persistence != "" && s.Service() != locks.Redis {
			bad("persistence", "applies to Redis lock nodes only")
		}
	default:
		bad("persistence", "unknown mode %q; valid: none, aof-everysec, aof-always", s.Persistence)
	}
	for name, c := range s.Clocks {
		if !contains(s.ClientNames(), name) {
			bad("clocks."+name, "no such client; this scenario has: %s", strings.Join(s.ClientNames(), ", "))
		}
		if c.Rate < 0 {
			bad("clocks."+name+".rate", "a clock rate must be positive, got %v", c.Rate)
		}
	}
	if err := s.Expect.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") { // "expect.field: message" each
			field, msg, ok := strings.Cut(line, ": ")
			if !ok {
				field, msg = "expect", line
			}
			bad(field, "%s", msg)
		}
	}
	for name := range s.Expect.Registers {
		if !contains(resource.Registers, name) {
			bad("expect.registers."+name, "no such register; valid registers: %s", strings.Join(resource.Registers, ", "))
		}
	}
	return errs
}

// ClientNames lists the clients, client-1 first.
func (s *Scenario) ClientNames() []string {
	var out []string
	for i := 1; i <= s.Clients; i++ {
		out = append(out, fmt.Sprintf("client-%d", i))
	}
	return out
}

// NodeNames lists the lock-service nodes: n1.. for Redis, zk1.. for ZooKeeper.
func (s *Scenario) NodeNames() []string {
	prefix := "n"
	if s.Service() == locks.ZooKeeper {
		prefix = "zk"
	}
	var out []string
	for i := 1; i <= s.Nodes; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// Service is what the lock's nodes run (locks.Redis or locks.ZooKeeper).
func (s *Scenario) Service() string {
	if d, err := locks.Get(s.Lock); err == nil && d.Service != "" {
		return d.Service
	}
	return locks.Redis
}

// Leader names whichever ZooKeeper server leads when a fault strikes.
const Leader = "leader"

func (s *Scenario) targets() []string {
	t := append(s.ClientNames(), s.NodeNames()...)
	if s.Service() == locks.ZooKeeper {
		t = append(t, Leader)
	}
	t = append(t, s.failoverTargets()...)
	return t
}

// Role is a client's side of a read/write lock ("" for plain mutexes).
func (s *Scenario) Role(client string) string {
	if d, err := locks.Get(s.Lock); err != nil || !d.ReadWrite {
		return ""
	}
	for i, c := range s.ClientNames() {
		if c == client {
			if i < s.Workload.Readers {
				return locks.ReadRole
			}
			return locks.WriteRole
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
