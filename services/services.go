// Package services is the seam for kinds of lock service: Redis (one or more independent
// primaries, or a primary with replicas under Sentinel), a ZooKeeper ensemble, and whatever comes
// next. A kind lives in its own package under services/, implements Kind, and registers itself
// (services/all lists them). The scenario loader asks a kind to Plan what a scenario wants — node
// names, the targets the nemesis may act on, what it refuses — before anything starts; the runner
// starts the plan on a provider (package providers) and never asks which kind it is.
package services

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/internal/quickstart"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/proxies"
)

// Kind is one kind of lock service.
type Kind interface {
	// Name is what lock designs name as their Service ("redis", "zookeeper", ...).
	Name() string
	// Plan checks what a scenario asks of the service and lays out its servers and the targets
	// they offer, before anything starts. It reports each problem with bad, naming the scenario
	// field ("nodes", "replicas", "server.wait_timeout", ...); it may return nil after a problem.
	Plan(s Spec, bad Report) *Plan
	// Start starts the planned servers on env.Provider. On error, whatever it started is stopped
	// by the provider's Close (the caller's).
	Start(ctx context.Context, p *Plan, env Env) (Instance, error)
}

// Report records a problem with a scenario field.
type Report func(field, format string, a ...any)

// Spec is what a scenario asks of its lock service.
type Spec struct {
	Design locks.Design
	// Nodes is the number of lock nodes (the design's own number when the scenario gives none).
	Nodes int
	// Server is what the scenario asks of this kind of service beyond its nodes (timeouts,
	// replicas, ...), decoded by the kind (DecodeServer): a scenario's `server:` block as
	// written (a *yaml.Node), or, from Go, the kind's own settings value (redis.Settings{...}).
	// nil: the kind's defaults.
	Server   any
	TTL      time.Duration
	Duration time.Duration
}

// Plan is a service's layout, known before anything starts.
type Plan struct {
	Kind string
	Spec Spec
	// Nodes are the lock nodes, in order: what "every lock node" means for a random partition.
	Nodes []string
	// Servers are every server a client has a link to, lock nodes first (then replicas,
	// sentinels, ...): what a client's partition without nodes cuts it from.
	Servers []string
	// Targets are every server and role the nemesis may act on, with what each can take.
	Targets []nemesis.TargetInfo
	// MinTTL is the shortest lease or session the service grants (ZooKeeper: two ticks).
	MinTTL time.Duration
	// Detail is the kind's own (decoded server settings, ...).
	Detail any
}

// Layout names the servers the plan starts: two plans with the same layout start the same
// servers, whichever design asked (a kind's Start reads the nodes and the decoded settings, not
// the design). Settings that hold pointers print differently each time, so such plans never share
// one.
func (p *Plan) Layout() string {
	return strings.Join([]string{p.Kind, strings.Join(p.Nodes, ","), strings.Join(p.Servers, ","), fmt.Sprintf("%+v", p.Detail)}, "|")
}

// Target returns the plan's target named name.
func (p *Plan) Target(name string) (nemesis.TargetInfo, bool) {
	for _, t := range p.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return nemesis.TargetInfo{}, false
}

// Env is what a kind starts its servers with.
type Env struct {
	Dir      string // the run folder
	Provider providers.Provider
	Links    *proxies.Set
	Logger   *slog.Logger
}

// Instance is a started service.
type Instance interface {
	// Upstream is where a client's link to server forwards: the harness-side address of the
	// server's client port.
	Upstream(server string) string
	// Endpoints is what client dials, given the address of its own link to each server.
	Endpoints(client string, link func(server string) string) locks.Endpoints
	// Targets are the nemesis's handles on the plan's servers and roles.
	Targets() map[string]nemesis.Target
	// Stop stops what the kind runs besides the provider's nodes (Topology.Stop closes those).
	Stop() error
}

// LeaseScaled is implemented by a kind whose servers fail over on timers of their own (an
// election timeout) that a short run's lease would otherwise dwarf. ScaledServer returns the
// server settings, as a scenario's `server:` block writes them, that keep those timers the part
// of a lease of ttl they are in a deployment: what a grid of short runs uses, so that a crash
// of the leader decides nothing by the luck of an election.
type LeaseScaled interface {
	ScaledServer(ttl time.Duration) map[string]string
}

// Quorum is implemented by a kind whose servers replicate by majority vote, and which is
// deployed as an ensemble of QuorumSize nodes rather than one: what a run that must meet the
// service as its users do (a hunt) asks for when nothing says how many. A client library meets
// a one-node service otherwise than an ensemble: go-zookeeper fails a request queued across a
// reconnection when its list of servers has one entry, and keeps it (to answer on the next
// server) when it has three; a cut from a minority of nodes needs more than one.
type Quorum interface {
	QuorumSize() int
}

// DeployedNodes is the number of nodes kind name is deployed with: its quorum's size, or 0
// (the design's own number) for a kind that is not one.
func DeployedNodes(name string) int {
	k, err := Lookup(name)
	if err != nil {
		return 0
	}
	if q, ok := k.(Quorum); ok {
		return q.QuorumSize()
	}
	return 0
}

// Versioned is implemented by an Instance that knows which server program and version its
// servers run, as they report it ("etcd 3.4.23"): the run records it.
type Versioned interface {
	Server() string
}

// LeaseKeeper is implemented by an Instance whose servers can say what leases they keep for a
// run's lock: how long a lock really lasts is the servers' to say, not the scenario's TTL (a
// library may round the lease it asks for up to whole seconds, or ask for one of its own).
type LeaseKeeper interface {
	// Leases are the leases, keys with a time to live and sessions the servers keep for what a
	// run wrote under key, as they say it now.
	Leases(ctx context.Context, key string) ([]Lease, error)
}

// Lease is one lease, key or session a lock server keeps.
type Lease struct {
	Server string // the server that said
	What   string // what it keeps: "key lockcheck:…:lock", "lease 694d8c3a1f2b", "session 0x100…"
	// Granted is the lease as the server granted it, when the server says (etcd's granted TTL,
	// ZooKeeper's negotiated session timeout); 0 when it says only what is left (Redis).
	Granted time.Duration
	Left    time.Duration // what is left of it (for a session, what the server waits before ending it)
}

// Length is the lease's length as well as the server tells it: as granted, or what is left
// (a lower bound, close to the grant when asked just after it).
func (l Lease) Length() time.Duration {
	if l.Granted > 0 {
		return l.Granted
	}
	return l.Left
}

var (
	regMu sync.Mutex
	kinds = map[string]Kind{}
)

// Register makes a kind available under its name. It panics on a repeated name.
func Register(k Kind) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := kinds[k.Name()]; dup {
		panic("service kind registered twice: " + k.Name())
	}
	kinds[k.Name()] = k
}

// Lookup returns the named kind, or an error listing the valid ones.
func Lookup(name string) (Kind, error) {
	regMu.Lock()
	defer regMu.Unlock()
	k, ok := kinds[name]
	if !ok {
		return nil, fmt.Errorf("unknown service %q; valid services: %s%s", name, strings.Join(namesLocked(), ", "),
			quickstart.Missing())
	}
	return k, nil
}

// Names lists the registered kinds, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// PlanFor plans the service of spec.Design, reporting problems with bad.
func PlanFor(s Spec, bad Report) *Plan {
	k, err := Lookup(s.Design.ServiceName())
	if err != nil {
		bad("lock", "%s runs on %v", s.Design.Name, err)
		return nil
	}
	if s.Nodes == 0 {
		s.Nodes = s.Design.Nodes
	}
	p := k.Plan(s, bad)
	if p != nil {
		p.Kind, p.Spec = k.Name(), s
	}
	return p
}

// MustPlan plans spec and fails with every problem joined: for tests and tools that build their
// own specs.
func MustPlan(s Spec) (*Plan, error) {
	var problems []string
	p := PlanFor(s, func(field, format string, a ...any) {
		problems = append(problems, field+": "+fmt.Sprintf(format, a...))
	})
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return p, nil
}

// NodeNames is prefix1..prefixN.
func NodeNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return out
}

// DecodeServer decodes the spec's server settings into v, a pointer to the kind's settings
// struct (fields with yaml tags). A scenario's block is decoded one setting at a time, so errors
// keep the scenario's lines; problems are reported under "server.<setting>", unknown settings
// with the list of known ones. Settings given as a value of v's own type are taken as they are.
func DecodeServer(s Spec, v any, bad Report) {
	if s.Server == nil {
		return
	}
	n, ok := s.Server.(*yaml.Node)
	if !ok {
		settingsValue(s, v, bad)
		return
	}
	fields, names := settingFields(v)
	takes := fmt.Sprintf("the %s service takes: %s", s.Design.ServiceName(), strings.Join(names, ", "))
	if len(names) == 0 {
		takes = fmt.Sprintf("the %s service takes no settings", s.Design.ServiceName())
	}
	if n.Kind != yaml.MappingNode {
		bad("server", "want settings as key: value lines; %s", takes)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		f, ok := fields[key]
		if !ok {
			bad("server."+key, "unknown setting; %s", takes)
			continue
		}
		if err := n.Content[i+1].Decode(f.Addr().Interface()); err != nil {
			bad("server."+key, "%s", lineRE.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), ""))
		}
	}
}

var lineRE = regexp.MustCompile(`line \d+: `)

// settingsValue copies settings given from Go (a value or a pointer of v's type) into v.
func settingsValue(s Spec, v any, bad Report) {
	dst := reflect.ValueOf(v).Elem()
	src := reflect.ValueOf(s.Server)
	if src.Kind() == reflect.Pointer && !src.IsNil() {
		src = src.Elem()
	}
	if src.Type() != dst.Type() {
		bad("server", "settings of type %T given to the %s service, which takes %s", s.Server, s.Design.ServiceName(), dst.Type())
		return
	}
	dst.Set(src)
}

// settingFields maps the yaml names of v's fields to the fields.
func settingFields(v any) (map[string]reflect.Value, []string) {
	rv := reflect.ValueOf(v).Elem()
	out := map[string]reflect.Value{}
	var names []string
	for i := 0; i < rv.NumField(); i++ {
		tag, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		out[tag] = rv.Field(i)
		names = append(names, tag)
	}
	return out, names
}
