package nemesis

import "sort"

// Use is one thing a schedule may ask of a server target: Act (a Kind.ServerActs name) on
// Target, for a fault of kind Fault. Need is set when Act is the kind's own action (Kind.Needs).
type Use struct {
	Target, Act, Fault string
	Need               *Capability
}

// ServerUses lists, without repeats, what the schedule may ask of server targets (every target
// isClient says no to): its planned faults, and for a random package every kind it may draw on
// every server target that suits it. A provider that cannot do everything is asked about each
// before anything starts.
func (s Schedule) ServerUses(isClient func(target string) bool) []Use {
	seen := map[Use]bool{}
	add := func(kind, target string, f *Fault) {
		k, err := Lookup(kind)
		if err != nil || isClient(target) {
			return
		}
		acts := k.ServerActs
		if f != nil {
			acts = k.funcs.acts(*f)
		}
		for _, act := range acts {
			u := Use{Target: target, Act: act, Fault: k.Name}
			if k.Needs != nil && k.Needs.Name == act {
				u.Need = k.Needs
			}
			seen[u] = true
		}
	}
	for _, f := range s.Faults {
		add(f.Kind, f.Target, &f)
	}
	if r := s.Random; r != nil {
		for _, kind := range r.Faults {
			for _, t := range r.targetsOf(kind) {
				add(kind, t, nil)
			}
		}
	}
	out := make([]Use, 0, len(seen))
	for u := range seen {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		if a.Fault != b.Fault {
			return a.Fault < b.Fault
		}
		return a.Act < b.Act
	})
	return out
}

// UsesClientLinks says whether the schedule may act on a client's links (a kind with
// ClientLinks, planned on a client or a client's lock state, or drawn by a random package that
// may aim at one). When it may not, a run needs no proxy on its clients' links.
func (s Schedule) UsesClientLinks(isClient func(target string) bool) bool {
	onClient := func(kind, target string) bool {
		k, err := Lookup(kind)
		if err != nil || !k.ClientLinks {
			return false
		}
		return IsClientRole(target) || isClient(target)
	}
	for _, f := range s.Faults {
		if onClient(f.Kind, f.Target) {
			return true
		}
	}
	if r := s.Random; r != nil {
		for _, kind := range r.Faults {
			for _, t := range r.targetsOf(kind) {
				if onClient(kind, t) {
					return true
				}
			}
		}
	}
	return false
}
