package main

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/internal/starter"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
)

// Every template writes a set that loads: each scenario with its design file, from the folder the
// workflow runs in; the control and K2 and K3 are there; the design's program is found relative
// to its own file (CheckProgram), wherever lockcheck is started.
func TestInitWritesASetThatLoadsForEveryTemplate(t *testing.T) {
	for _, k := range starter.Kits {
		t.Run(k.Lang+"-"+k.Service, func(t *testing.T) {
			t.Chdir(t.TempDir())
			out := runCommand(t, "init", "--lang", k.Lang, "--service", k.Service, "--dir", "checks/lock")
			if !strings.Contains(out, "wrote .github/workflows/lockcheck.yml") || !strings.Contains(out, "\nnext: ") {
				t.Fatalf("init printed:\n%s", out)
			}
			if k.Lang == "go" {
				for _, f := range []string{"checks/lock/lockcheck_test.go", "checks/lock/mylock_test.go"} {
					src, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					formatted, err := format.Source(src)
					if err != nil || !bytes.Equal(formatted, src) {
						t.Errorf("%s is not gofmt'd Go (%v):\n%s", f, err, src)
					}
					if !strings.Contains(string(src), "package lock_test") {
						t.Errorf("%s: package not named after its folder", f)
					}
				}
				// Acquire's ctx is one attempt's: the template says so, and where a lock's
				// background work must run instead, lest its adapter tie a heartbeat to it.
				lock, _ := os.ReadFile("checks/lock/mylock_test.go")
				for _, want := range []string{"is cancelled as soon as Acquire returns", "start that on the lock's own context, made in\n// newMyLock and cancelled in Close, never on ctx"} {
					if !strings.Contains(string(lock), want) {
						t.Errorf("mylock_test.go does not warn about Acquire's ctx: lacks %q", want)
					}
				}
				test, _ := os.ReadFile("checks/lock/lockcheck_test.go")
				for _, fault := range []string{`{"none", control}`, `{"pause-after-acquire", required}`, `{"pause-before-write", required}`} {
					if !strings.Contains(string(test), fault) {
						t.Errorf("the Go checks lack %s:\n%s", fault, test)
					}
				}
				return
			}
			files, _ := filepath.Glob("checks/lock/scenarios/*.yaml")
			for i := range files {
				files[i], _ = filepath.Abs(files[i])
			}
			t.Chdir(t.TempDir()) // lockcheck started elsewhere: paths are relative to the files
			var names []string
			for _, f := range files {
				sc, err := scenarios.Load(f)
				if err != nil {
					t.Errorf("%v", err)
					continue
				}
				names = append(names, sc.Name)
				if sc.Name+".yaml" != filepath.Base(f) || sc.Lock != starter.DesignName {
					t.Errorf("%s: name %q, lock %q", f, sc.Name, sc.Lock)
				}
				if err := sc.CheckProgram(); err != nil {
					t.Errorf("%s: %v", f, err)
				}
			}
			for _, want := range []string{"no-faults", "pause-after-acquire", "pause-before-write"} {
				if !slices.Contains(names, want) {
					t.Errorf("no %s scenario among %v", want, names)
				}
			}
		})
	}
}

// init asks nothing and overwrites nothing: a second init fails naming the files, before writing
// any; --force overwrites. Wrong choices are named with the valid ones.
func TestInitRefusesToOverwriteAndNamesTheChoices(t *testing.T) {
	t.Chdir(t.TempDir())
	runCommand(t, "init", "--lang", "python")
	os.WriteFile("lockcheck/my_lock.py", []byte("# mine\n"), 0o644)
	os.Remove("lockcheck/scenarios/kill-holder.yaml")
	err := runCommandErr(t, "init", "--lang", "python")
	if err == nil || !strings.Contains(err.Error(), "not overwriting lockcheck/my_lock.py, ") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second init: %v", err)
	}
	if b, _ := os.ReadFile("lockcheck/my_lock.py"); string(b) != "# mine\n" {
		t.Fatalf("init overwrote a file")
	}
	if _, err := os.Stat("lockcheck/scenarios/kill-holder.yaml"); err == nil {
		t.Fatalf("a refused init wrote a file")
	}
	runCommand(t, "init", "--lang", "python", "--force")
	if b, _ := os.ReadFile("lockcheck/my_lock.py"); string(b) == "# mine\n" {
		t.Fatalf("--force did not overwrite")
	}
	if st, err := os.Stat("lockcheck/my_lock.py"); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("the adapter is not executable: %v", err)
	}
	for args, want := range map[string]string{
		"--lang rust":                   `--lang "rust": choose one of go, python, java, program`,
		"--lang java --service redis":   `--service "redis": the java templates run on zookeeper; templates for other services: etcd (program);`,
		"--lang python --service etcd":  "the python templates run on redis, zookeeper; templates for other services: etcd (program)",
		"--lang go --service postgres":  "the go templates run on redis; templates for other services: etcd (program); mariadb (program); postgres (program); zookeeper (python, java)",
		"--lang go --service zookeeper": "change the Service of its lockchecktest.Design and its client",
		"--lang java --service etcd":    "change its design file's service: and its client",
		"--lang program --service etcdd": `--service "etcdd": not a lock service lockcheck runs; valid services: ` +
			strings.Join(services.Names(), ", "),
	} {
		err := runCommandErr(t, append([]string{"init"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("init %s: %v, want %q", args, err, want)
		}
	}
}

// Every lock service lockcheck runs (its registry of service kinds, not a list of init's own) has
// a template: init --service takes each, and its design file names that service.
func TestInitHasATemplateForEveryService(t *testing.T) {
	names := services.Names()
	if len(names) < 5 {
		t.Fatalf("services registered: %v", names)
	}
	for _, name := range names {
		var langs []string
		for _, k := range starter.Kits {
			if k.Service == name {
				langs = append(langs, k.Lang)
			}
		}
		if len(langs) == 0 {
			t.Errorf("no init template for the %s service", name)
			continue
		}
		t.Chdir(t.TempDir())
		runCommand(t, "init", "--lang", langs[0], "--service", name, "--workflow", "-")
		if langs[0] == "go" {
			continue
		}
		design, err := os.ReadFile("lockcheck/my-lock.yaml")
		if err != nil || !strings.Contains(string(design), "\nservice: "+name+" ") {
			t.Errorf("init --service %s: design file (%v):\n%s", name, err, design)
		}
	}
	help := runCommand(t, "init", "--help")
	if !strings.Contains(help, "the lock service: "+strings.Join(names, ", ")) {
		t.Errorf("init --help does not list the services %v:\n%s", names, help)
	}
}

// The PostgreSQL template (a lease in a table, through psql) passes its control as written,
// against a real PostgreSQL.
func TestInitPostgresTemplatePassesItsControl(t *testing.T) {
	if testing.Short() {
		t.Skip("real PostgreSQL")
	}
	bin := lockcheck(t)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		os.Chmod(d, 0o755) // PostgreSQL, run as its own user when we are root, must reach its folder
	}
	t.Chdir(dir)
	runCommand(t, "init", "--lang", "program", "--service", "postgres", "--workflow", "-")
	out, err := exec.Command(bin, "run", "--results", "results", "lockcheck/scenarios/no-faults.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verdict matches expect") || !strings.Contains(string(out), "mutual exclusion held") {
		t.Fatalf("lockcheck run of the postgres template's control: %v\n%s", err, out)
	}
}

func runCommandErr(t *testing.T, args ...string) error {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	return root.Execute()
}

// The CI workflow init writes is valid for GitHub Actions (actionlint: syntax, schema,
// expressions, the known actions' inputs), and every lockcheck command line in it parses with the
// real command's flags.
func TestInitWorkflowPassesActionlint(t *testing.T) {
	for _, lang := range []string{"go", "python", "java", "program"} {
		t.Run(lang, func(t *testing.T) {
			t.Chdir(t.TempDir())
			runCommand(t, "init", "--lang", lang)
			const path = ".github/workflows/lockcheck.yml"
			var out bytes.Buffer
			l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			errs, err := l.LintFile(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(errs) > 0 {
				t.Fatalf("actionlint found %d problem(s):\n%s", len(errs), out.String())
			}
			src, _ := os.ReadFile(path)
			var wf struct {
				Jobs map[string]struct {
					Steps []struct {
						Run  string `yaml:"run"`
						Uses string `yaml:"uses"`
					} `yaml:"steps"`
				} `yaml:"jobs"`
			}
			if err := yaml.Unmarshal(src, &wf); err != nil {
				t.Fatal(err)
			}
			commands, artifact := 0, false
			shellWord := regexp.MustCompile(`"[^"]*"`)
			for _, job := range wf.Jobs {
				for _, step := range job.Steps {
					artifact = artifact || strings.HasPrefix(step.Uses, "actions/upload-artifact")
					for _, line := range strings.Split(step.Run, "\n") {
						fields := strings.Fields(shellWord.ReplaceAllString(line, "x.yaml"))
						if len(fields) == 0 || fields[0] != "lockcheck" {
							continue
						}
						commands++
						cmd, rest, err := newRootCommand().Find(fields[1:])
						if err == nil {
							err = cmd.ParseFlags(rest)
						}
						if err != nil {
							t.Errorf("%q: %v", line, err)
						}
					}
				}
			}
			if !artifact || (lang != "go" && commands == 0) {
				t.Errorf("the workflow runs %d lockcheck command(s), keeps an artifact: %v\n%s", commands, artifact, src)
			}
		})
	}
}

// The Go template passes its control out of the box: in a Go module of its own (lockcheck
// replaced by this checkout, and nothing fetched), the command init prints — go mod tidy, then
// go test of the control — reaches "safe".
func TestInitGoTemplatePassesItsControl(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	out := runCommand(t, "init", "--lang", "go")
	next := ""
	for _, line := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(line, "next: "); ok {
			next = c
		}
	}
	if !strings.HasPrefix(next, "go mod tidy && go test ") {
		t.Fatalf("init --lang go prints no go test command:\n%s", out)
	}
	gomod := "module example.com/project\n\ngo 1.26\n\nrequire github.com/lockcheck/lockcheck v0.0.0\n\nreplace " +
		"github.com/lockcheck/lockcheck => " + root + "\n"
	if err := os.WriteFile("go.mod", []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("go.sum", sum, 0o644)
	cmd := exec.Command("sh", "-c", strings.Replace(next, "go test ", "go test -count=1 -v ", 1))
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "--- PASS: TestMyLock/none") || !strings.Contains(string(got), "safe: mutual exclusion held") {
		t.Fatalf("%s: %v\n%s", next, err, got)
	}
}
