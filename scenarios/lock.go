package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/internal/yamlpos"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/workloads"
)

// LockSpec is a scenario's `lock:` as written: the name of a registered design, a design file
// (a path ending in .yaml or .yml, relative to the scenario), or an external design given inline
// (`{command: [python3, adapters/redis_py_lock.py], service: redis, nodes: 1, token: none}`).
type LockSpec struct {
	Name string
	File string
	// Version is the version a design file is named at (FILE.yaml@VERSION): its go: section's
	// library is built at it.
	Version string
	Inline  *locks.Program

	problems []lockProblem // found while decoding; reported with the scenario's other errors
	// lines are where the program's fields are written (command, dir) in the file that names
	// them, so that CheckProgram's errors name the line.
	lines map[string]int
}

// lockProblem is a problem with one field of `lock:` ("" for lock itself).
type lockProblem struct{ field, msg string }

// UnmarshalYAML takes a scalar (a name or a design file) or a mapping (an inline design). It
// never fails: problems are kept and reported by field (resolveLock), so each names its line.
func (l *LockSpec) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if file, version, ok := locks.DesignFileName(n.Value); ok {
			l.File, l.Version = file, version
		} else {
			l.Name = n.Value
		}
	case yaml.MappingNode:
		var p locks.Program
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if !slices.Contains(programFields(), k) {
				l.problems = append(l.problems, lockProblem{k, "unknown field; an external design takes: " + strings.Join(programFields(), ", ")})
				continue
			}
			// One field at a time, so a wrong value is reported at its own field.
			pair := &yaml.Node{Kind: yaml.MappingNode, Content: n.Content[i : i+2]}
			if err := pair.Decode(&p); err != nil {
				l.problems = append(l.problems, lockProblem{k, yamlMessage(err)})
			}
		}
		l.Inline = &p
	default:
		l.problems = append(l.problems, lockProblem{"", "give a design's name, a design file (.yaml) or an inline design {command: [...], ...}"})
	}
	return nil
}

// yamlMessage is a decoding error without yaml's "line N:" prefixes.
func yamlMessage(err error) string {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, m := range te.Errors {
			if _, msg, ok := yamlpos.LineOf(m); ok {
				m = msg
			}
			msgs = append(msgs, m)
		}
		return strings.Join(msgs, "; ")
	}
	return err.Error()
}

// programFields are the fields an external design takes (locks.Program's yaml names).
func programFields() []string {
	var out []string
	t := reflect.TypeOf(locks.Program{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		out = append(out, name)
	}
	return out
}

// DesignFileSpec is the lock of a scenario built in Go (a hunt's, New's) for a design file named
// where a design's name goes (x.yaml, x.yaml@v1.2.3): its path made absolute from the current
// folder now, as the scenario a run folder keeps is read from that folder, where a relative path
// would be looked up (results-…/lockcheck/x.yaml). A file that is not there fails before
// anything starts, as does a name that is not a design file.
func DesignFileSpec(name string) (LockSpec, error) {
	file, version, ok := locks.DesignFileName(name)
	switch {
	case !ok:
		return LockSpec{}, fmt.Errorf("%s is not a design file (FILE.yaml or FILE.yaml@VERSION)", name)
	case version == "" && strings.HasSuffix(name, "@"):
		return LockSpec{}, fmt.Errorf("%s: no version after @ (write %sv1.2.3, or leave @ out for the file's go.version)", name, name)
	}
	return designFileAt(file, version)
}

// designFileAt is DesignFileSpec for a name already split.
func designFileAt(file, version string) (LockSpec, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return LockSpec{}, fmt.Errorf("design file %s: %w", file, err)
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		return LockSpec{}, fmt.Errorf("design file %s: no such file (%s; a relative path is taken from the current folder)", file, abs)
	}
	return LockSpec{File: abs, Version: version}, nil
}

// filePath is where the design file l names is: File itself when absolute, else in base.
func (l LockSpec) filePath(base string) string {
	if filepath.IsAbs(l.File) {
		return l.File
	}
	return filepath.Join(base, l.File)
}

// resolveLock finds the scenario's design: registered, from a design file, or inline. Problems
// with a design file are placed in that file (File and Line set); the others in the scenario.
func (s *Scenario) resolveLock(root *yaml.Node) []*Error {
	var errs []*Error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &Error{Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	l := s.LockSpec
	for _, p := range l.problems {
		field := "lock"
		if p.field != "" {
			field += "." + p.field
		}
		bad(field, "%s", p.msg)
	}
	switch {
	case len(l.problems) > 0:
	case l.Inline != nil:
		p := *l.Inline
		if checkProgram(&p, s.baseDir(), func(field, format string, a ...any) { bad("lock."+field, format, a...) }) {
			s.setDesign(locks.ExternalDesign(p))
		}
		idx := yamlpos.New(root)
		s.LockSpec.lines = map[string]int{"command": idx.Line("lock.command"), "dir": idx.Line("lock.dir")}
	case l.File != "":
		p, lines, ferrs := loadDesignFile(l.filePath(s.baseDir()), l.File, l.Version)
		if len(ferrs) > 0 {
			return ferrs
		}
		s.LockSpec.lines = lines
		s.setDesign(locks.ExternalDesign(*p))
		if root != nil {
			s.Source = inlineDesignFile(s.Source, root, *p)
		}
	case l.Name == "":
		bad("lock", "missing: a design's name (valid locks: %s), a design file (.yaml) or an inline design {command: [...], "+
			"...}", strings.Join(locks.Names(), ", "))
	default:
		d, err := locks.Get(l.Name)
		if err != nil {
			if rd, rerr := s.recordedDesign(l.Name); rerr == nil {
				s.setDesign(rd) // a run folder's copy of a test's run: judged, never run
				return errs
			}
			bad("lock", "%v; or give a design file (.yaml) or an inline design {command: [...], ...}", err)
		} else {
			s.setDesign(d)
		}
	}
	return errs
}

// DesignNamed resolves a registered design's name or a design file (relative to the folder of a
// scenario at path) as a scenario's lock: a tool that builds a scenario for a design can size it
// by the design's service (its shortest lease) before building it.
func DesignNamed(spec LockSpec, path string) (locks.Design, error) {
	s := Scenario{LockSpec: spec, Path: path}
	if spec.Inline != nil {
		return locks.ExternalDesign(*spec.Inline), nil
	}
	if errs := s.resolveLock(nil); len(errs) > 0 {
		for _, e := range errs {
			if e.File == "" {
				e.File = path
			}
		}
		return locks.Design{}, joinErrors(errs)
	}
	return s.design, nil
}

func (s *Scenario) setDesign(d locks.Design) {
	s.design, s.Lock, s.lockOK = d, d.Name, true
}

// baseDir is the folder relative paths in the scenario are taken from: its own.
func (s *Scenario) baseDir() string { return filepath.Dir(s.Path) }

// loadDesignFile reads an external design from a file, at version when the file was named with one
// (FILE.yaml@VERSION, for a design with a go: section); errors name that file (shown as shown).
// It also returns the lines its command, dir and go source are written on.
func loadDesignFile(path, shown, version string) (*locks.Program, map[string]int, []*Error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, []*Error{{Field: "lock", Msg: fmt.Sprintf("design file: %v", err)}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, nil, asErrors(yamlErrors(shown, nil, yamlpos.Relined(src, err)))
	}
	idx := yamlpos.New(&root)
	var p locks.Program
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return nil, nil, asErrors(yamlErrors(shown, idx, err))
	}
	var errs []*Error
	if version != "" {
		if p.Go == nil {
			return nil, nil, []*Error{{File: shown, Field: "go", Msg: fmt.Sprintf("%s@%s: only a design with a go: section takes a version "+
				"(go: {source: my_adapter.go, module: MODULE}: its adapter is built against the library at that version)", shown, version)}}
		}
		p.Go.Version = "v" + strings.TrimPrefix(version, "v") // 1.2.3 is read as v1.2.3, as for LIB@VERSION
	}
	if p.Go != nil && p.Name == "" { // NAME@VERSION, NAME the file's
		p.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	checkProgram(&p, filepath.Dir(path), func(field, format string, a ...any) {
		if version != "" && field == "go.version" {
			field = "" // the version was named with the file, not written in it
		}
		errs = append(errs, &Error{File: shown, Line: idx.Line(field), Field: field, Msg: fmt.Sprintf(format, a...)})
	})
	return &p, map[string]int{"command": idx.Line("command"), "dir": idx.Line("dir"), "go.source": idx.Line("go.source")}, errs
}

// A design file named where a design's name goes (lockcheck matrix --locks my-lock.yaml@v1.2.0).
func init() {
	locks.DesignFile = func(path, version string) (locks.Design, error) {
		spec, err := designFileAt(path, version)
		if err != nil {
			return locks.Design{}, err
		}
		p, _, errs := loadDesignFile(spec.File, path, version)
		if len(errs) > 0 {
			return locks.Design{}, joinErrors(errs)
		}
		return locks.ExternalDesign(*p), nil
	}
}

func asErrors(err error) []*Error {
	var out []*Error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if se, ok := e.(*Error); ok {
				out = append(out, se)
			}
		}
	}
	return out
}

// checkProgram checks an external design's fields, fills in its defaults and makes its working
// directory absolute: dir is relative to base, the folder of the file that defines the design,
// and is that folder when not given, so relative paths in command (the program, its script)
// are relative to the file that names them, wherever lockcheck is started. It reports whether
// the design is usable. What the machine must have (the program itself) is checked
// before a run starts (CheckProgram), not here: a stored run is re-judged anywhere.
func checkProgram(p *locks.Program, base string, bad func(field, format string, a ...any)) bool {
	ok := true
	fail := func(field, format string, a ...any) { ok = false; bad(field, format, a...) }
	switch {
	case p.Go != nil:
		ok = checkGo(p, base, fail) && ok
	case len(p.Command) == 0:
		fail("command", "missing: the program to run and its arguments, e.g. [python3, adapters/redis_py_lock.py], "+
			"or a Go adapter to build: go: {source: my_adapter.go, module: MODULE, version: VERSION}")
	case slices.Contains(p.Command, ""):
		fail("command", "an empty argument in %q", p.Command)
	}
	if p.Name == "" && len(p.Command) > 0 {
		last := filepath.Base(p.Command[len(p.Command)-1])
		p.Name = strings.TrimSuffix(last, filepath.Ext(last))
	}
	if p.Service == "" {
		p.Service = locks.Redis
	} else if _, err := services.Lookup(p.Service); err != nil {
		fail("service", "%v", err)
	}
	if p.Nodes < 0 {
		fail("nodes", "a design uses at least 1 node, got %d", p.Nodes)
	}
	if p.Nodes == 0 {
		p.Nodes = 1
	}
	if p.Token == "" {
		p.Token = "none"
	}
	seen := map[string]bool{}
	for i, pt := range p.Points {
		field := fmt.Sprintf("points[%d]", i)
		switch {
		case pt == "":
			fail(field, "a program point needs a name")
		case slices.Contains(workloads.Points, pt):
			fail(field, "%s is a point of every design already (%s): name the program's own points", pt, strings.Join(workloads.Points, ", "))
		case seen[pt]:
			fail(field, "%s is listed twice", pt)
		}
		seen[pt] = true
	}
	for i, step := range p.Usage {
		field := fmt.Sprintf("usage[%d]", i)
		switch u, err := locks.LookupUsage(step); {
		case err != nil:
			fail(field, "%v", err)
		case u.Everyone:
			fail(field, "every design takes %s (lockcheck asks it of the lock's acquire and release): list only what the program itself must do", step)
		case slices.Contains(p.Usage[:i], step):
			fail(field, "%s is listed twice", step)
		}
	}
	if !filepath.IsAbs(p.Dir) {
		if abs, err := filepath.Abs(filepath.Join(base, p.Dir)); err == nil {
			p.Dir = abs
		}
	}
	return ok
}

// checkGo checks a design's go: section and makes its source absolute (relative to base).
func checkGo(p *locks.Program, base string, fail func(field, format string, a ...any)) bool {
	g := *p.Go
	p.Go = &g
	ok := true
	if len(p.Command) > 0 {
		ok = false
		fail("command", "a design with a go: section has no command: lockcheck builds its program from go.source")
	}
	switch {
	case g.Source == "":
		ok = false
		fail("go.source", "missing: the Go adapter, a file of package main written against the library and lockcheck's "+
			"lockproto.go (lockcheck init --lang go --library MODULE writes one)")
	case filepath.Ext(g.Source) != ".go":
		ok = false
		fail("go.source", "%s is not a Go file (.go)", g.Source)
	case !filepath.IsAbs(g.Source):
		if abs, err := filepath.Abs(filepath.Join(base, g.Source)); err == nil {
			p.Go.Source = abs
		}
	}
	if g.Module == "" {
		ok = false
		fail("go.module", "missing: the library's module path, e.g. github.com/bsm/redislock")
	}
	if msg := locks.CheckVersion(g.Version); msg != "" {
		ok = false
		fail("go.version", "%s", msg)
	}
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(g.Source), ".go")
	}
	return ok
}

// CheckProgram checks, before a run, that this machine can start the scenario's external lock
// program: its working directory exists, its command is found, and the arguments that are paths
// (pathArgument) name files. Errors name the file, line and field; a design without a program
// passes.
func (s *Scenario) CheckProgram() error {
	p := s.design.Program
	if p == nil {
		return nil
	}
	field, file := "lock.", s.Path
	if s.LockSpec.File != "" {
		field, file = "", s.LockSpec.filePath(s.baseDir())
	}
	where := func(f, line, format string, a ...any) error {
		return &Error{File: file, Line: s.LockSpec.lines[line], Field: field + f, Msg: fmt.Sprintf(format, a...)}
	}
	if st, err := os.Stat(p.Dir); err != nil || !st.IsDir() {
		return where("dir", "dir", "%s is not a folder on this machine", p.Dir)
	}
	if p.Go != nil {
		if _, err := os.Stat(p.Go.Source); err != nil {
			return where("go.source", "go.source", "%s does not exist on this machine", p.Go.Source)
		}
		return nil
	}
	prog := p.Command[0]
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(p.Dir, prog)
		}
		if st, err := os.Stat(prog); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return where("command[0]", "command", "%s is not an executable file on this machine (%s)", p.Command[0], relativeTo(p.Dir, file))
		}
	} else if _, err := exec.LookPath(prog); err != nil {
		return where("command[0]", "command", "%q is not found in PATH on this machine", prog)
	}
	for i, arg := range p.Command[1:] {
		if !pathArgument(arg) {
			continue
		}
		path := arg
		if !filepath.IsAbs(path) {
			path = filepath.Join(p.Dir, path)
		}
		if _, err := os.Stat(path); err != nil {
			return where(fmt.Sprintf("command[%d]", i+1), "command", "%s does not exist on this machine (%s)", arg, relativeTo(p.Dir, file))
		}
	}
	return nil
}

// scriptExts are the endings of files an interpreter runs: an argument with one is a path.
var scriptExts = []string{".py", ".rb", ".js", ".mjs", ".pl", ".sh", ".jar", ".java", ".php", ".lua", ".tcl"}

// pathArgument reports whether an argument of command is a path lockcheck checks before a run:
// one that starts with ./ or ../, or a script's file name (a.py, lib/a.jar) that is not an
// option (-x), a setting (a=b) or a URL. Other arguments are passed as written and not checked.
func pathArgument(arg string) bool {
	if strings.HasPrefix(arg, "./") || strings.HasPrefix(arg, "../") {
		return true
	}
	if strings.HasPrefix(arg, "-") || strings.ContainsAny(arg, "=:") {
		return false
	}
	return slices.Contains(scriptExts, filepath.Ext(arg))
}

// relativeTo says where relative paths of a program are taken from, for its errors.
func relativeTo(dir, file string) string {
	if filepath.Dir(mustAbs(file)) == dir {
		return "relative paths are taken from the folder of " + filepath.Base(file) + ": " + dir
	}
	return "relative paths are taken from its dir: " + dir
}

func mustAbs(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// inlineDesignFile returns src with the `lock: file.yaml` value replaced by the design the file
// holds, as one line of JSON (a flow mapping), so the copy of the scenario a run folder keeps is
// complete in itself and can be re-judged where the design file is not.
func inlineDesignFile(src []byte, root *yaml.Node, p locks.Program) []byte {
	v := lockValueNode(root)
	if v == nil || v.Kind != yaml.ScalarNode {
		return src
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	if v.Line < 1 || v.Line > len(lines) {
		return src
	}
	line := lines[v.Line-1]
	start := v.Column - 1
	end := scalarEnd(line, start, v.Style)
	if start < 0 || end <= start || end > len(line) {
		return src
	}
	j, err := json.Marshal(p)
	if err != nil {
		return src
	}
	repl := append([]byte(nil), line[:start]...)
	repl = append(repl, j...)
	repl = append(repl, fmt.Sprintf("  # from design file %s", v.Value)...)
	repl = append(repl, line[end:]...)
	lines[v.Line-1] = repl
	return bytes.Join(lines, nil)
}

// lockValueNode is the value of the top-level `lock:` key.
func lockValueNode(root *yaml.Node) *yaml.Node {
	if root == nil || root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return nil
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "lock" {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalarEnd is the end of a one-line scalar starting at start, as written (quotes included).
func scalarEnd(line []byte, start int, style yaml.Style) int {
	if start >= len(line) {
		return -1
	}
	switch {
	case style&yaml.DoubleQuotedStyle != 0, style&yaml.SingleQuotedStyle != 0:
		q := line[start]
		for i := start + 1; i < len(line); i++ {
			switch {
			case q == '"' && line[i] == '\\':
				i++
			case q == '\'' && line[i] == '\'' && i+1 < len(line) && line[i+1] == '\'':
				i++
			case line[i] == q:
				return i + 1
			}
		}
		return -1
	}
	end := start
	for end < len(line) && line[end] != '\n' && line[end] != '\r' && !(line[end] == '#' && end > start && (line[end-1] == ' ' || line[end-1] == '\t')) {
		end++
	}
	for end > start && (line[end-1] == ' ' || line[end-1] == '\t') {
		end--
	}
	return end
}
