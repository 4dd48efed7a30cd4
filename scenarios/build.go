package scenarios

import (
	"maps"
	"slices"

	"github.com/lockcheck/lockcheck/locks"
)

// New checks a scenario built in Go by the rules a file is loaded with, fills in the same
// defaults and resolves the same lengths in TTLs, and returns it ready to run. Tools and tests
// build scenarios this way (the matrix's cells, hunt packages): a misspelt field does not
// compile, and what it builds is exactly as valid as a file. Errors name the field, under
// s.Path (or the scenario's name).
//
// The lock is s.LockSpec (a registered design's name, a design file, or an inline program); a
// scenario that gives only Lock, a design's name, means that design. s may be a copy of a
// loaded scenario with fields changed: it is checked afresh, and its text is then its YAML
// (Text), no longer the file it was loaded from.
func New(s Scenario) (*Scenario, error) {
	s.clone()
	if s.LockSpec.Name == "" && s.LockSpec.File == "" && s.LockSpec.Inline == nil {
		s.LockSpec = LockSpec{Name: s.Lock}
	}
	if _, _, ok := locks.DesignFileName(s.LockSpec.Name); ok {
		// A design file given as a name (x.yaml@v1.2.3) is taken from the current folder, as
		// locks.Get takes it; kept as a name, the run folder's copy would look for it there.
		spec, err := DesignFileSpec(s.LockSpec.Name)
		if err != nil {
			return nil, err
		}
		s.LockSpec = spec
	}
	s.Source, s.design, s.lockOK, s.plan, s.moved = nil, locks.Design{}, false, nil, nil
	if errs := s.complete(nil); len(errs) > 0 {
		where := s.Path
		if where == "" {
			where = "scenario " + s.Name
		}
		for _, e := range errs {
			if e.File == "" {
				e.File = where
			}
		}
		return nil, joinErrors(errs)
	}
	return &s, nil
}

// clone gives s its own copies of what a copy of a scenario would otherwise share with the
// original and the loader changes in place (nemesis entries, random packages, maps).
func (s *Scenario) clone() {
	s.Nemesis = slices.Clone(s.Nemesis)
	for i, e := range s.Nemesis {
		if e.Random != nil {
			r := *e.Random
			r.Faults, r.Targets = slices.Clone(r.Faults), slices.Clone(r.Targets)
			s.Nemesis[i].Random = &r
		}
	}
	s.Clocks = maps.Clone(s.Clocks)
	s.ClientLocks = maps.Clone(s.ClientLocks)
	s.clientDesigns = nil
	if s.Sometimes != nil {
		st := *s.Sometimes
		s.Sometimes = &st
	}
	s.Claims = slices.Clone(s.Claims)
	s.LockSpec.problems = nil
}
