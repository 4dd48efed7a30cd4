package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/internal/yamlpos"
	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/resource"
	"github.com/lockcheck/lockcheck/services"
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
		return nil, yamlErrors(path, nil, yamlpos.Relined(src, err))
	}
	idx := yamlpos.New(&root)
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true) // a misspelt field is an error, not a silent default
	if err := dec.Decode(&s); err != nil {
		return nil, yamlErrors(path, idx, err)
	}
	s.Path, s.Source = path, src
	errs, decoded := s.decodeFaultParams()
	if !decoded { // a value of the wrong type, as yaml reports above: nothing worth checking yet
		return nil, placed(path, idx, errs)
	}
	if errs = append(errs, s.complete(&root)...); len(errs) > 0 {
		for _, e := range errs {
			if old, ok := s.moved[e.Field]; ok { // a setting written at the top level: placed there
				e.Field = old
			}
		}
		return nil, placed(path, idx, errs)
	}
	return &s, nil
}

// placed places errors not already placed (in a design file) at their field's line of path.
func placed(path string, idx yamlpos.Index, errs []*Error) error {
	for _, e := range errs {
		if e.File == "" {
			e.File = path
			e.Line = idx.Line(e.Field)
		}
	}
	return joinErrors(errs)
}

// complete checks a decoded or built scenario and fills in what it leaves out, the same way for
// both: its lock, the settings old files give at the top level, defaults, lengths in TTLs, then
// every rule. root is the file's YAML (nil for a scenario built in Go).
func (s *Scenario) complete(root *yaml.Node) []*Error {
	errs := s.resolveLock(root)
	errs = append(errs, s.moveOldSettings()...)
	s.applyDefaults()
	errs = append(errs, s.resolveTTLs()...)
	errs = append(errs, s.resolveClientLocks()...)
	return append(errs, s.validate()...)
}

// yamlErrors turns yaml.v3's "line N: ..." messages into Errors that also name the field there.
func yamlErrors(path string, idx yamlpos.Index, err error) error {
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
		if line, msg, ok := yamlpos.LineOf(m); ok {
			e.Line, e.Msg = line, msg
			e.Field = idx.FieldAt(e.Line)
			if field, msg, ok := unknownField(idx, e.Line, e.Msg); ok {
				e.Msg = msg
				if field != "" {
					e.Field = field
				}
			}
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

// decodeFaultParams has each planned fault's kind decode the entry's other fields, its own
// parameters (before TTLs are resolved: a kind's durations may be written in TTLs too). decoded
// is false when a value could not be decoded.
func (s *Scenario) decodeFaultParams() (errs []*Error, decoded bool) {
	decoded = true
	for i := range s.Nemesis {
		e := &s.Nemesis[i]
		p := fmt.Sprintf("nemesis[%d]", i)
		bad := func(field, format string, a ...any) {
			errs = append(errs, &Error{Field: p + "." + field, Msg: fmt.Sprintf(format, a...)})
		}
		if e.Random != nil {
			for _, key := range slices.Sorted(maps.Keys(e.Own)) {
				bad(key, "unknown field %s; a random package's fields go under random:", key)
			}
		} else if !nemesis.DecodeParams(&e.Fault, e.Own, bad) {
			decoded = false
		}
		e.Own = nil
	}
	return errs, decoded
}

func (s *Scenario) applyDefaults() {
	if s.lockOK && s.Nodes == 0 {
		s.Nodes = s.design.Nodes
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
	for i := range s.Nemesis {
		if s.Nemesis[i].Point != "" && s.Nemesis[i].Occurrence == 0 {
			s.Nemesis[i].Occurrence = 1
		}
		if r := s.Nemesis[i].Random; r != nil && r.Mode == nemesis.ModeHunt {
			// A hunt follows the lock's states, with lengths that can outlast a lease.
			if len(r.Targets) == 0 {
				r.Targets = nemesis.RoleNames()
			}
			if s.TTL != 0 && r.MinFor == 0 && r.MaxFor == 0 {
				r.MinFor, r.MaxFor = yamltime.TTLs(1.2), yamltime.TTLs(3)
			}
			if s.TTL != 0 && r.Interval == 0 {
				r.Interval = yamltime.TTLs(2)
			}
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
	// The lock itself was checked by resolveLock; err says whether there is a design to check
	// the rest against.
	design := s.design
	var err error
	if !s.lockOK {
		err = errors.New("no lock design")
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
	if s.Provider != "" && !slices.Contains(providers.Names(), s.Provider) {
		bad("provider", "%v", providers.Unknown(s.Provider))
	}
	w := s.Workload
	if w.BackoffMax < w.BackoffMin {
		bad("workload.backoff_max", "%s is below backoff_min %s", w.BackoffMax.D(), w.BackoffMin.D())
	}
	if err == nil && w.Readers > 0 && !design.ReadWrite {
		bad("workload.readers", "%s is not a read/write lock", s.Lock)
	}
	if w.Readers > s.Clients {
		bad("workload.readers", "%d readers but only %d clients", w.Readers, s.Clients)
	}
	if err == nil && w.Reentrant && !design.Reentrant {
		bad("workload.reentrant", "%s is not reentrant", s.Lock)
	}
	for _, step := range w.Usage.Steps() {
		if err == nil {
			if why := design.NotOffered(step); why != "" {
				bad("workload.usage."+step, "%s", why)
			}
		}
	}
	if w.Usage.Reenter < 0 || w.Usage.ReleaseRetry < 0 {
		bad("workload.usage", "reenter and release-retry count steps: 0 or more")
	}
	if w.Usage.Try != nil && w.Usage.Try.D() < 0 {
		bad("workload.usage.try", "a try waits 0s or more, got %s", w.Usage.Try.D())
	}
	if err == nil {
		s.plan = services.PlanFor(s.Spec(), bad)
	}
	s.validateNemesis(bad)
	for name, c := range s.Clocks {
		if !slices.Contains(s.ClientNames(), name) {
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
	if s.Sometimes != nil {
		s.Sometimes.validate(bad)
	}
	if s.Expect.Exercised != nil && len(s.Nemesis) == 0 {
		bad("expect.exercised", "this scenario has no fault to exercise: give a nemesis, or leave exercised out")
	}
	for i, c := range s.Expect.OverlapsOnlyWith {
		if !slices.Contains(s.ClientNames(), c) {
			bad(fmt.Sprintf("expect.overlaps_only_with[%d]", i), "no such client %q; this scenario has: %s", c, strings.Join(s.ClientNames(), ", "))
		}
	}
	for name := range s.Expect.Registers {
		if !slices.Contains(resource.Registers, name) {
			bad("expect.registers."+name, "no such register; valid registers: %s", strings.Join(resource.Registers, ", "))
		}
	}
	return errs
}

// validateNemesis checks every nemesis entry against the scenario's clients and lock service:
// what every fault needs (a target that exists, a time within the run or a program point of a
// client, one fault per pass of a point), then what its kind needs (nemesis.Check), and random
// packages (nemesis.CheckRandom).
func (s *Scenario) validateNemesis(bad func(string, string, ...any)) {
	v := s.view()
	targets := v.names()
	points := append([]string(nil), workloads.Points...)
	points = append(points, s.design.Points...)
	randoms := 0
	atPass := map[string]int{}
	for i, e := range s.Nemesis {
		p := fmt.Sprintf("nemesis[%d]", i)
		at := func(field, format string, a ...any) { bad(p+"."+field, format, a...) }
		if e.Random != nil {
			if e.Kind != "" || e.Target != "" || e.Point != "" {
				bad(p, "an entry is either a planned fault or a random package, not both")
			}
			if randoms++; randoms > 1 {
				bad(p+".random", "only one random package per scenario")
			}
			if s.plan != nil {
				e.Random.ByKind = e.Random.Suitable(v)
				e.Random.Nodes = s.plan.Nodes
				e.Random.Points = s.design.Points
			}
			nemesis.CheckRandom(*e.Random, v, targets, func(field, format string, a ...any) { bad(p+".random."+field, format, a...) })
			continue
		}
		t, known := v.Target(e.Target)
		if !known {
			at("target", "no such target %q; this scenario has: %s", e.Target, strings.Join(targets, ", "))
		}
		passer := e.Target
		switch {
		case e.By == "":
		case e.Point == "":
			at("by", "by names the client whose program point starts the fault: give point too")
		case nemesis.IsClientRole(e.Target):
			at("by", "a fault on %s starts at that client's own pass of its point: leave by out", e.Target)
		default:
			if b, ok := v.Target(e.By); !ok || !b.Client || nemesis.IsClientRole(e.By) {
				at("by", "%q is not a client; this scenario's clients: %s", e.By, strings.Join(s.ClientNames(), ", "))
			}
			passer = e.By
		}
		step := nemesis.IsStep(e.Kind) // told at its time, taken at the next pass of its point
		switch {
		case e.Point != "" && e.At != 0 && !step:
			at("point", "give either at (a time) or point (a program point), not both")
		case step && e.Point != "":
			if !slices.Contains(points, e.Point) {
				at("point", "unknown program point %q; valid points for %s: %s", e.Point, s.Lock, strings.Join(points, ", "))
			}
			if e.Occurrence < 0 {
				at("occurrence", "passes count from 1 (0: the next), got %d", e.Occurrence)
			}
		case e.Point != "":
			if known && !t.Client && e.By == "" {
				at("point", "program points are in clients; %s is a server (by: CLIENT starts a fault on it as that client passes the point)", e.Target)
			}
			if !slices.Contains(points, e.Point) {
				at("point", "unknown program point %q; valid points for %s: %s", e.Point, s.Lock, strings.Join(points, ", "))
			}
			if e.Occurrence < 1 {
				at("occurrence", "passes count from 1, got %d", e.Occurrence)
			}
			key := fmt.Sprintf("%s %s %d", passer, e.Point, e.Occurrence)
			if j, dup := atPass[key]; dup {
				at("occurrence", "nemesis[%d] already acts on %s at pass %d of %s: one fault per pass", j, passer, e.Occurrence, e.Point)
			} else {
				atPass[key] = i
			}
		case s.Duration != 0 && e.At.D() >= s.Duration.D():
			at("at", "%s is not before the end of the run (%s)", e.At.D(), s.Duration.D())
		}
		if known || e.Kind != "" {
			nemesis.Check(e.Fault, v, at)
		}
	}
}

// view is the scenario as faults see it: its clients and its lock service's targets and links.
type view struct{ s *Scenario }

func (s *Scenario) view() view { return view{s} }

func (v view) Target(name string) (nemesis.TargetInfo, bool) {
	if slices.Contains(v.s.ClientNames(), name) {
		return nemesis.TargetInfo{Name: name, Client: true, Usage: v.s.DesignOf(name).Offered()}, true
	}
	if r, ok := nemesis.ClientRole(name); ok {
		r.Usage = v.s.commonUsage()
		return r, true
	}
	if v.s.plan == nil {
		return nemesis.TargetInfo{}, false
	}
	return v.s.plan.Target(name)
}

// commonUsage lists the usage steps every client's design offers: what a lock state, which may
// stand for any client, can be asked.
func (s *Scenario) commonUsage() []string {
	var out []string
	for _, step := range locks.UsageNames() {
		every := true
		for _, c := range s.ClientNames() {
			every = every && s.DesignOf(c).Offers(step)
		}
		if every {
			out = append(out, step)
		}
	}
	return out
}

func (v view) ClientLinks() []string {
	var out []string
	if v.s.plan != nil {
		out = append(out, v.s.plan.Servers...)
	}
	return append(out, "resource")
}

// names lists every target: clients, the lock service's servers and roles, then the clients'
// lock states (holder, waiter, overtaken).
func (v view) names() []string {
	out := v.s.ClientNames()
	if v.s.plan != nil {
		for _, t := range v.s.plan.Targets {
			out = append(out, t.Name)
		}
	}
	return append(out, nemesis.RoleNames()...)
}
