package scenarios

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/locks"
)

// Recorded is a scenario's `design:` block: what a run folder keeps of a design that a Go test
// registered (locks.Design.Outside, through lockchecktest), which no other lockcheck process
// knows. With it the folder's scenario.yaml loads anywhere, with the service plan and every rule
// its run was checked with, and `lockcheck check` judges the run; the design cannot run from it
// (its code is in that test).
type Recorded struct {
	Name      string   `yaml:"name"`
	Service   string   `yaml:"service,omitempty"`
	Nodes     int      `yaml:"nodes"`
	Token     string   `yaml:"token,omitempty"`
	Expires   bool     `yaml:"expires,omitempty"`
	Renews    bool     `yaml:"renews,omitempty"`
	Fair      bool     `yaml:"fair,omitempty"`
	Queued    bool     `yaml:"queued,omitempty"`
	ReadWrite bool     `yaml:"read_write,omitempty"`
	Reentrant bool     `yaml:"reentrant,omitempty"`
	Quorum    bool     `yaml:"quorum,omitempty"`
	AnyNodes  bool     `yaml:"any_nodes,omitempty"`
	Points    []string `yaml:"points,omitempty,flow"`
	Usage     []string `yaml:"usage,omitempty,flow"`
}

// record is what a run folder keeps of d.
func record(d locks.Design) *Recorded {
	return &Recorded{Name: d.Name, Service: d.Service, Nodes: d.Nodes, Token: d.Token, Expires: d.Expires, Renews: d.Renews,
		Fair: d.Fair, Queued: d.Queued, ReadWrite: d.ReadWrite, Reentrant: d.Reentrant, Quorum: d.Quorum, AnyNodes: d.AnyNodes,
		Points: d.Points, Usage: d.Usage}
}

// design is the recorded design as lockcheck judges it: everything a scenario's rules and the
// checker read, and a constructor that says where the code is.
func (r Recorded) design() locks.Design {
	why := fmt.Errorf("lock %s: a Go test registered it (lockchecktest): this run folder records what judging it needs, "+
		"not its code: judge it with lockcheck check, run it from that test", r.Name)
	token := r.Token
	if token == "" {
		token = "none"
	}
	return locks.Design{Name: r.Name, Summary: "a design a Go test registered, as its run recorded it", Source: "the project under test",
		Token: token, Nodes: max(r.Nodes, 1), Expires: r.Expires, Renews: r.Renews, Fair: r.Fair, Queued: r.Queued,
		ReadWrite: r.ReadWrite, Reentrant: r.Reentrant, Quorum: r.Quorum, AnyNodes: r.AnyNodes, Points: r.Points,
		Usage: r.Usage, Service: r.Service, Outside: true,
		New:     func(locks.Env) (locks.Lock, error) { return nil, why },
		Prepare: func() error { return why }}
}

// RunText is the scenario as its run folder keeps it (Text), with a `design:` block for a lock a
// Go test registered (locks.Design.Outside), so that the folder is judged anywhere.
func (s *Scenario) RunText() ([]byte, error) {
	text, err := s.Text()
	if err != nil || !s.design.Outside || s.Recorded != nil {
		return text, err
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(string(text), "\n"))
	b.WriteString("\n# What judging this run needs of its lock, which a Go test registered (lockchecktest): lockcheck check\n" +
		"# reads it, as no other lockcheck knows the design.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]*Recorded{"design": record(s.design)}); err != nil {
		return nil, err
	}
	return []byte(b.String()), enc.Close()
}

// recordedDesign resolves a lock the registry does not know from the scenario's design: block,
// when it records that lock.
func (s *Scenario) recordedDesign(name string) (locks.Design, error) {
	if s.Recorded == nil || s.Recorded.Name != name {
		return locks.Design{}, errors.New("no design: block for it")
	}
	return s.Recorded.design(), nil
}
