package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
)

// byolScenario is a scenario whose lock is given as lockLine (a design's name, a design file, or
// an inline external design).
func byolScenario(lockLine string) string {
	return `name: x
` + lockLine + `
clients: 2
ttl: 500ms
duration: 2s
nemesis:
  - {fault: pause, target: client-1, point: after-acquire, for: 1s}
expect:
  mutual_exclusion: violated
  overlaps_only_with: [client-1]
`
}

func TestEveryAdapterScenarioLoads(t *testing.T) {
	files, _ := filepath.Glob("byol/*.yaml")
	if len(files) < 9 {
		t.Fatalf("expected K2, K3 and a control for each of three adapters, found %v", files)
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if s.Name+".yaml" != filepath.Base(f) {
			t.Errorf("%s: name %q does not match the file name", f, s.Name)
		}
	}
}

func TestInlineExternalDesign(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.yaml")
	s, err := Parse(path, []byte(strings.Replace(byolScenario(
		"lock: {command: [python3, my_lock.py], dir: adapters, service: zookeeper, token: czxid, points: [before-commit]}"),
		"ttl: 500ms", "ttl: 1s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	d := s.Design()
	p := d.Program
	switch {
	case p == nil:
		t.Fatal("an inline design must carry its program to the worker")
	case s.Lock != "my_lock" || d.Name != "my_lock":
		t.Errorf("name %q / %q: want the program's file name", s.Lock, d.Name)
	case p.Dir != filepath.Join(dir, "adapters"):
		t.Errorf("dir %q: want it relative to the scenario, made absolute", p.Dir)
	case d.ServiceName() != "zookeeper" || d.Nodes != 1 || !d.Expires || !d.HasToken():
		t.Errorf("design %+v: want zookeeper, 1 node, a lease, a token", d)
	case s.Nodes != 1 || s.NodeNames()[0] != "zk1":
		t.Errorf("nodes %v: the plan must follow the design's service", s.NodeNames())
	}
	// The program's own points may be named in the nemesis; the built-in ones stay valid.
	src := strings.Replace(byolScenario("lock: {command: [python3, my_lock.py], points: [before-commit]}"),
		"point: after-acquire", "point: before-commit", 1)
	if _, err := Parse(path, []byte(src)); err != nil {
		t.Fatalf("a program's own point: %v", err)
	}
}

func TestInlineDesignErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ lock, want string }{
		{"lock: {comand: [python3, a.py]}", "x.yaml:2: lock.comand: unknown field; an external design takes: name, summary, command"},
		{"lock: {token: none}", "x.yaml:2: lock.command: missing: the program to run"},
		{"lock: {command: [python3, a.py], service: etcdd}", `x.yaml:2: lock.service: unknown service "etcdd"; valid services:`},
		{"lock: {command: [python3, a.py], points: [after-acquire]}", "x.yaml:2: lock.points[0]: after-acquire is a point of every design already"},
		{"lock: {command: [python3, a.py], nodes: many}", "x.yaml:2: lock.nodes: cannot unmarshal"},
		{"lock: [python3, a.py]", "x.yaml:2: lock: give a design's name, a design file (.yaml) or an inline design"},
		{"lock: redlok", `x.yaml:2: lock: unknown lock "redlok"; valid locks:`},
	} {
		_, err := Parse("x.yaml", []byte(byolScenario(c.lock)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error containing %q, got %v", c.lock, c.want, err)
		}
	}
	src := strings.Replace(byolScenario("lock: redis-py"), "clients: 2", "clients: 2\nreplicas: 1", 1)
	if _, err := Parse("x.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "x.yaml:4: replicas: redis-py runs as a program of "+
		"its own") {
		t.Errorf("replicas with an adapter: got %v", err)
	}
	src = strings.Replace(byolScenario("lock: {command: [python3, a.py]}"), "overlaps_only_with: [client-1]", "overlaps_only_with: [client-9]", 1)
	want := `x.yaml:10: expect.overlaps_only_with[0]: no such client "client-9"`
	if _, err := Parse("x.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("overlaps_only_with of an unknown client: got %v", err)
	}
}

// A design file is read relative to the scenario, its errors name its own lines, and the copy of
// the scenario a run folder keeps holds the design itself, so it can be judged elsewhere.
func TestDesignFile(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "designs"), 0o755)
	design := "# my lock\nname: mine\ncommand: [python3, mine.py]\ndir: .\nservice: redis\ntoken: INCR at acquire\n"
	os.WriteFile(filepath.Join(dir, "designs", "mine.yaml"), []byte(design), 0o644)
	path := filepath.Join(dir, "x.yaml")
	s, err := Parse(path, []byte(byolScenario("lock: designs/mine.yaml   # ours")))
	if err != nil {
		t.Fatal(err)
	}
	if s.Lock != "mine" || s.Design().Program.Dir != filepath.Join(dir, "designs") || !s.Design().HasToken() {
		t.Fatalf("design %+v from the file", s.Design())
	}
	if !strings.Contains(string(s.Source), `lock: {"name":"mine","command":["python3","mine.py"],"dir":"`+filepath.Join(dir, "designs")+`"`) ||
		!strings.Contains(string(s.Source), "# from design file designs/mine.yaml   # ours") {
		t.Fatalf("the run folder's copy does not hold the design:\n%s", s.Source)
	}
	elsewhere := filepath.Join(t.TempDir(), "scenario.yaml")
	again, err := Parse(elsewhere, s.Source)
	if err != nil {
		t.Fatalf("the run folder's copy does not load on its own: %v", err)
	}
	if again.Lock != "mine" || again.Design().Program.Dir != s.Design().Program.Dir {
		t.Fatalf("copy's design %+v, want %+v", again.Design().Program, s.Design().Program)
	}

	os.WriteFile(filepath.Join(dir, "designs", "bad.yaml"), []byte("name: bad\ncommand: [python3, bad.py]\nnodes: -1\nservise: redis\n"), 0o644)
	_, err = Parse(path, []byte(byolScenario("lock: designs/bad.yaml")))
	if err == nil || !strings.Contains(err.Error(), "designs/bad.yaml:4: servise: unknown field servise; valid fields: command, connection, dir") {
		t.Fatalf("a misspelt field in a design file: want its file and line, got %v", err)
	}
	os.WriteFile(filepath.Join(dir, "designs", "bad.yaml"), []byte("name: bad\ncommand: [python3, bad.py]\nnodes: -1\n"), 0o644)
	_, err = Parse(path, []byte(byolScenario("lock: designs/bad.yaml")))
	if err == nil || !strings.Contains(err.Error(), "designs/bad.yaml:3: nodes: a design uses at least 1 node") {
		t.Fatalf("a bad value in a design file: want its file and line, got %v", err)
	}
	_, err = Parse(path, []byte(byolScenario("lock: designs/none.yaml")))
	if err == nil || !strings.Contains(err.Error(), "x.yaml:2: lock: design file:") {
		t.Fatalf("a missing design file: got %v", err)
	}
}

// What the machine must have is checked before a run, not when a stored run is re-judged. Paths
// in a program's command are relative to the file that names it (its dir, by default that
// file's folder), wherever lockcheck was started; errors name the file, line and field.
func TestCheckProgram(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "scenarios"), 0o755)
	os.WriteFile(filepath.Join(dir, "a.sh"), []byte("exit 0\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "my_lock.py"), []byte(""), 0o644)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.MkdirAll(filepath.Join(dir, "classes"), 0o755)
	adapterScenario, _ := filepath.Abs("byol/k2-redis-py.yaml")
	t.Chdir(t.TempDir()) // started somewhere else: nothing may depend on it
	path := filepath.Join(dir, "x.yaml")
	nested := filepath.Join(dir, "scenarios", "x.yaml")
	for _, c := range []struct{ path, lock, want string }{
		{path, "lock: {command: [sh, a.sh]}", ""},
		{path, "lock: {command: [./run.sh]}", ""},
		{nested, "lock: {command: [python3, ../my_lock.py]}", ""},
		{nested, "lock: {command: [../run.sh, --verbose, -Dlog=./x.log, http://h/a.py]}", ""},
		{nested, "lock: {command: [java, -cp, ../classes, com.example.LockAdapter]}", ""},
		{path, "lock: {command: [no-such-interpreter, a.py]}", `x.yaml:2: lock.command[0]: "no-such-interpreter" is not found in PATH on this machine`},
		{path, "lock: {command: [./run.sh], dir: gone}", "x.yaml:2: lock.dir: " + filepath.Join(dir, "gone") + " is not a folder on this machine"},
		{nested, "lock: {command: [./run.sh]}", "x.yaml:2: lock.command[0]: ./run.sh is not an executable file on this machine " +
			"(relative paths are taken from the folder of x.yaml: " + filepath.Join(dir, "scenarios") + ")"},
		{nested, "lock: {command: [python3, my_lock.py]}", "x.yaml:2: lock.command[1]: my_lock.py does not exist on this machine"},
		{nested, "lock: {command: [python3, ../nope.py], dir: " +
			"..}", "lock.command[1]: ../nope.py does not exist on this machine (relative paths are taken from its dir: " + dir + ")"},
	} {
		s, err := Parse(c.path, []byte(byolScenario(c.lock)))
		if err != nil {
			t.Fatalf("%s: %v", c.lock, err)
		}
		err = s.CheckProgram()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.lock, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: want %q, got %v", c.lock, c.want, err)
		case c.want == "" && s.Design().Program.Dir != filepath.Dir(c.path):
			t.Errorf("%s: runs in %s, want the scenario's folder", c.lock, s.Design().Program.Dir)
		}
	}

	// A design file's program is relative to the design file, and its errors name its lines.
	os.MkdirAll(filepath.Join(dir, "designs"), 0o755)
	os.WriteFile(filepath.Join(dir, "designs", "mine.yaml"), []byte("name: mine\nservice: redis\ncommand: [./run.sh]\n"), 0o644)
	s, err := Parse(nested, []byte(byolScenario("lock: ../designs/mine.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckProgram(); err == nil || !strings.Contains(err.Error(), "designs/mine.yaml:3: command[0]: ./run.sh is not an executable file") {
		t.Errorf("a design file's missing program: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "designs", "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	if err := s.CheckProgram(); err != nil {
		t.Errorf("the program beside its design file: %v", err)
	}
	s, _ = Load(adapterScenario)
	if err := s.CheckProgram(); err != nil {
		t.Errorf("a registered adapter has no program to check: %v", err)
	}
}

// A scenario built in Go whose lock is a design file at a version, named as a design is
// (x.yaml@v1.0.3), takes the file from the current folder and keeps the design itself: its run
// folder's copy loads there, at that version, never looking for the file beside it.
func TestABuiltScenarioTakesADesignFileAtAVersion(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.MkdirAll("lockcheck", 0o755)
	os.WriteFile("lockcheck/x.yaml", []byte("service: zookeeper\ngo: {source: zk_adapter.go, module: github.com/go-zookeeper/zk, version: v1.0.2}\n"), 0o644)
	built := func(lock string) (*Scenario, error) {
		return New(Scenario{Name: "built", Path: "built.yaml", Lock: lock, Clients: 2, TTL: Duration(time.Second), Duration: Duration(2 * time.Second)})
	}
	s, err := built("lockcheck/x.yaml@v1.0.3")
	if err != nil {
		t.Fatal(err)
	}
	if s.LockSpec.File != filepath.Join(dir, "lockcheck", "x.yaml") || s.LockSpec.Version != "v1.0.3" || s.Lock != "x@v1.0.3" {
		t.Fatalf("lock %s from %+v", s.Lock, s.LockSpec)
	}
	text, err := s.RunText()
	if err != nil || strings.Contains(string(text), "x.yaml") {
		t.Fatalf("the run folder's copy names the design file (%v):\n%s", err, text)
	}
	again, err := Parse(filepath.Join(dir, "results", "built", "scenario.yaml"), text)
	if err != nil || again.Lock != "x@v1.0.3" || again.Design().Program.Go.Version != "v1.0.3" {
		t.Fatalf("the run folder's copy: %v", err)
	}
	// Where a design's name goes (lockcheck matrix --locks, lockchecktest.Check's Lock): the same.
	if d, err := locks.Get("lockcheck/x.yaml@v1.0.3"); err != nil || d.Name != "x@v1.0.3" ||
		d.Program.Go.Source != filepath.Join(dir, "lockcheck", "zk_adapter.go") {
		t.Errorf("locks.Get: %v, %+v", err, d.Program)
	}
	if _, err := locks.Get("lockcheck/none.yaml@v1.0.3"); err == nil || !strings.Contains(err.Error(), "design file lockcheck/none.yaml: no such file") {
		t.Errorf("locks.Get of a missing design file: %v", err)
	}
	for lock, want := range map[string]string{
		"lockcheck/none.yaml@v1.0.3": "design file lockcheck/none.yaml: no such file (" + filepath.Join(dir, "lockcheck", "none.yaml"),
		"lockcheck/x.yaml@":          "lockcheck/x.yaml@: no version after @",
	} {
		if _, err := built(lock); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", lock, err, want)
		}
	}
}
