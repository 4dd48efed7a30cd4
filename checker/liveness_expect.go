package checker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// ClientsExpect is the part of expect.liveness about each client's share (clients.go) and about
// how much of the run askers were refused.
type ClientsExpect struct {
	// StarvedAfter sets the bound a client is starved after (Options.StarvedAfter) for this
	// scenario's verdict, in place of the default the runner derives from the scenario.
	StarvedAfter      *yamltime.Duration `yaml:"starved_after" json:"starved_after_ns,omitempty"`
	MaxStarvedClients *int               `yaml:"max_starved_clients" json:"max_starved_clients,omitempty"`
	MinStarvedClients *int               `yaml:"min_starved_clients" json:"min_starved_clients,omitempty"` // shows a starving lock is caught
	// MaxPassedOver bounds the longest any client was passed over (ClientLiveness.PassedOver).
	MaxPassedOver *yamltime.Duration `yaml:"max_passed_over" json:"max_passed_over_ns,omitempty"`
	// MaxRefusedShare and MinRefusedShare bound Liveness.RefusedShare, a fraction (0.25: a
	// quarter of the run).
	MaxRefusedShare *float64 `yaml:"max_refused_share" json:"max_refused_share,omitempty"`
	MinRefusedShare *float64 `yaml:"min_refused_share" json:"min_refused_share,omitempty"`
}

func (e Expect) validateClients() []error {
	l := e.Liveness
	if l == nil {
		return nil
	}
	var errs []error
	for field, n := range map[string]*int{"max_starved_clients": l.MaxStarvedClients, "min_starved_clients": l.MinStarvedClients} {
		if n != nil && *n < 0 {
			errs = append(errs, fmt.Errorf("expect.liveness.%s: %d is negative", field, *n))
		}
	}
	if l.MaxStarvedClients != nil && l.MinStarvedClients != nil && *l.MinStarvedClients > *l.MaxStarvedClients {
		errs = append(
			errs,
			fmt.Errorf("expect.liveness.min_starved_clients: %d is above max_starved_clients %d", *l.MinStarvedClients, *l.MaxStarvedClients),
		)
	}
	if l.StarvedAfter != nil && *l.StarvedAfter == 0 {
		errs = append(errs, fmt.Errorf("expect.liveness.starved_after: must be longer than 0 (every client that ever waited would be starved)"))
	}
	for field, f := range map[string]*float64{"max_refused_share": l.MaxRefusedShare, "min_refused_share": l.MinRefusedShare} {
		if f != nil && (*f < 0 || *f > 1) {
			errs = append(errs, fmt.Errorf("expect.liveness.%s: %g is not a share between 0 and 1 (0.25: a quarter of the run)", field, *f))
		}
	}
	if l.MaxRefusedShare != nil && l.MinRefusedShare != nil && *l.MinRefusedShare > *l.MaxRefusedShare {
		errs = append(errs, fmt.Errorf("expect.liveness.min_refused_share: %g is above max_refused_share %g", *l.MinRefusedShare, *l.MaxRefusedShare))
	}
	return errs
}

func (e Expect) matchClients(v Verdict) []Mismatch {
	l := e.Liveness
	if l == nil {
		return nil
	}
	var out []Mismatch
	starved := v.Liveness.StarvedClients()
	starvedText := strconv.Itoa(len(starved))
	if len(starved) > 0 {
		starvedText += " (" + strings.Join(starved, ", ") + ")"
	}
	starvedText += fmt.Sprintf(
		", passed over for longer than %s by at least %d acquisitions of others",
		Human(v.Liveness.StarvedAfter),
		v.Liveness.StarvedBy,
	)
	if l.MaxStarvedClients != nil && len(starved) > *l.MaxStarvedClients {
		out = append(out, Mismatch{"liveness.max_starved_clients", strconv.Itoa(*l.MaxStarvedClients), starvedText})
	}
	if l.MinStarvedClients != nil && len(starved) < *l.MinStarvedClients {
		out = append(out, Mismatch{"liveness.min_starved_clients", strconv.Itoa(*l.MinStarvedClients), starvedText})
	}
	if l.MaxPassedOver != nil {
		if w := v.Liveness.LongestPassedOver(); w.PassedOver.Length > l.MaxPassedOver.D() {
			out = append(out, Mismatch{"liveness.max_passed_over", l.MaxPassedOver.String(),
				fmt.Sprintf("%s (%s)", w.Client, stretchCell(w.PassedOver, w.Acquisitions))})
		}
	}
	share := v.Liveness.RefusedShare
	shareText := fmt.Sprintf("%.2f (%s refused)", share, Human(v.Liveness.Refused))
	if l.MaxRefusedShare != nil && share > *l.MaxRefusedShare {
		out = append(out, Mismatch{"liveness.max_refused_share", strconv.FormatFloat(*l.MaxRefusedShare, 'g', -1, 64), shareText})
	}
	if l.MinRefusedShare != nil && share < *l.MinRefusedShare {
		out = append(out, Mismatch{"liveness.min_refused_share", strconv.FormatFloat(*l.MinRefusedShare, 'g', -1, 64), shareText})
	}
	return out
}

// StarvedAfter is the bound the scenario sets for its verdict (expect.liveness.starved_after),
// or 0 when it sets none.
func (e Expect) StarvedAfter() yamltime.Duration {
	if e.Liveness == nil || e.Liveness.StarvedAfter == nil {
		return 0
	}
	return *e.Liveness.StarvedAfter
}
