package matrix

import (
	"github.com/lockcheck/lockcheck/locks"
)

// ScenarioText is the text of the matrix's scenario for design d under the named column — its
// workload, lengths and nemesis, scaled to d's lease as a cell is — or, in notApplicable, why
// the column does not apply to d. lockcheck init writes a project's starter scenarios from it.
func ScenarioText(d locks.Design, fault string, seed int64) (text, notApplicable string, err error) {
	f, err := faultNamed(fault)
	if err != nil {
		return "", "", err
	}
	sc, notApplicable, err := cellScenario(d, f, seed)
	if err != nil || notApplicable != "" {
		return "", notApplicable, err
	}
	b, err := sc.YAML()
	return string(b), "", err
}
