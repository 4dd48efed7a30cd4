package matrix

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/runner"
)

// ReadBaseline reads the matrix a new one is gated against (lockcheck matrix --baseline): a
// matrix.json file, a matrix folder, or a results folder (as ReadFolder finds them). Each run
// whose folder is still there (history.jsonl and scenario.yaml) is judged again by this checker,
// so that a matrix an earlier release wrote is held to the same rules as the cells it is compared
// with; a run without its folder keeps the outcome recorded in the file. It says how many runs
// were judged again, and of the others how many were kept as recorded.
func ReadBaseline(path string) (m *Matrix, again, recorded int, err error) {
	if strings.HasSuffix(path, ".json") {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, 0, err
		}
		m = &Matrix{}
		if err := json.Unmarshal(b, m); err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", path, err)
		}
		// Its run folders are where ReadFolder would look for them: under the results folder two
		// levels up (results/matrix/<time>/matrix.json).
		rebaseRunFolders(m, filepath.Dir(filepath.Dir(filepath.Dir(path))))
	} else {
		part, err := ReadFolder(path)
		if err != nil {
			return nil, 0, 0, err
		}
		m = part.M
	}
	again, recorded = Rejudge(m)
	return m, again, recorded, nil
}

// Rejudge judges again, in place, every run of m whose run folder can still be judged
// (runner.Verdict), and sets each cell's status from its runs again. It returns how many runs it
// judged again and how many it kept as recorded.
func Rejudge(m *Matrix) (again, recorded int) {
	for i := range m.Cells {
		c := &m.Cells[i]
		changed := false
		for j := range c.Outcomes {
			o := &c.Outcomes[j]
			if o.Status == Error || o.Status == NA {
				continue
			}
			if o.Dir == "" || !exists(filepath.Join(o.Dir, runner.HistoryFile)) {
				recorded++
				continue
			}
			v, sc, err := runner.Verdict(o.Dir)
			if err != nil || sc == nil {
				recorded++ // its scenario no longer loads (a design this build lacks): as recorded
				continue
			}
			dir := o.Dir
			*o = Classify(v, sc.Design().HasToken())
			o.Dir = dir
			again++
			changed = true
		}
		if changed {
			c.summarise()
		}
	}
	return again, recorded
}
