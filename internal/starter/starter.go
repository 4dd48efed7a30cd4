// Package starter makes the starter set `lockcheck init` writes into a project's repository: a
// lock adapter template in the project's language (Go through package lockchecktest, Python,
// Java, or any program speaking the lock-client protocol), its design file, a scenario set — the
// control, K2, K3 and every generic matrix column that applies to the design — with the
// verdicts a CI gate should require, and a GitHub Actions workflow that runs them and keeps the
// run folders. The template passes all of it as written; the project then puts its own lock in.
package starter

import (
	"embed"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/services"
)

//go:embed templates
var templates embed.FS

// Options choose the starter set. Nothing is asked: flags say it all.
type Options struct {
	Lang    string // go | python | java | program
	Service string // the lock service (default: the language's first, Kits)
	// Dir is the folder the set goes in (default "lockcheck"), relative to the repository's root,
	// where the workflow runs.
	Dir string
	// Workflow is the CI workflow's path ("": .github/workflows/lockcheck.yml; "-": none).
	Workflow string
	// Version is the lockcheck the workflow installs (go install ...@Version; "" = latest).
	Version string
}

// File is one file of the set.
type File struct {
	Path string
	Text []byte
	Mode fs.FileMode
}

// Kit is a language and lock service with a template that passes the starter scenarios.
type Kit struct {
	Lang, Service string
	files         []string // under templates/<lang>-<service>/; the first is the program
	command       []string // the design's command, relative to the design file's folder
	token         string   // the fencing token the template hands out ("none": none)
	debian        []string // what CI installs beyond redis-server and libfaketime
}

// Kits are the templates, by language; the first of a language is its default service.
var Kits = []Kit{
	{Lang: "go", Service: locks.Redis, files: []string{"mylock_test.go.tmpl", "lockcheck_test.go.tmpl"}, token: "INCR of <key>:token at acquire"},
	{Lang: "python", Service: locks.Redis, files: []string{"my_lock.py"}, command: []string{"/usr/bin/python3", "my_lock.py"},
		token: "INCR of <key>:token at acquire", debian: []string{"python3-redis"}},
	{Lang: "python", Service: locks.ZooKeeper, files: []string{"my_lock.py"}, command: []string{"/usr/bin/python3", "my_lock.py"},
		token: "czxid of the holder's lock node", debian: []string{"zookeeper", "default-jre-headless", "python3-kazoo"}},
	{Lang: "java", Service: locks.ZooKeeper, files: []string{"MyLock.java"},
		command: []string{"java", "-Xmx64m", "-XX:TieredStopAtLevel=1", "-cp", curatorClasspath, "MyLock.java"},
		token:   "czxid of the holder's lock node", debian: []string{"zookeeper", "default-jdk-headless", "libcurator-recipes-java"}},
	{Lang: "program", Service: locks.Redis, files: []string{"my-lock"}, command: []string{"./my-lock"},
		token: "INCR of <key>:token at acquire", debian: []string{"redis-tools", "jq"}},
	// The services below by name: their designs' packages are left out of the quick-start build.
	{Lang: "program", Service: "etcd", files: []string{"my-lock"}, command: []string{"./my-lock"},
		token: "the revision of the transaction that put the key", debian: []string{"etcd-server", "etcd-client", "jq"}},
	{Lang: "program", Service: "mariadb", files: []string{"my-lock"}, command: []string{"./my-lock"},
		token: "the lease row's AUTO_INCREMENT id", debian: []string{"mariadb-server", "mariadb-client", "jq"}},
	{Lang: "program", Service: "postgres", files: []string{"my-lock"}, command: []string{"./my-lock"},
		token: "nextval of a sequence, in the statement that takes the lease", debian: []string{"postgresql", "postgresql-client", "jq"}},
}

// curatorClasspath is Curator's InterProcessMutex and what it needs, as Debian installs them.
var curatorClasspath = func() string {
	var jars []string
	for _, j := range []string{"curator-recipes", "curator-framework", "curator-client", "zookeeper", "zookeeper-jute",
		"guava", "slf4j-api", "slf4j-simple", "jackson-databind", "jackson-core", "jackson-annotations"} {
		jars = append(jars, "/usr/share/java/"+j+".jar")
	}
	return strings.Join(jars, ":")
}()

// DesignName is the template design's name.
const DesignName = "my-lock"

// kit finds the template for o, or says which choices there are: the languages, and the lock
// services lockcheck runs (its registry of service kinds) with the languages each has a template
// in.
func kit(o Options) (Kit, error) {
	var langs []string
	for _, k := range Kits {
		if !slices.Contains(langs, k.Lang) {
			langs = append(langs, k.Lang)
		}
	}
	if !slices.Contains(langs, o.Lang) {
		return Kit{}, fmt.Errorf("--lang %q: choose one of %s", o.Lang, strings.Join(langs, ", "))
	}
	for _, k := range Kits {
		if k.Lang == o.Lang && (o.Service == "" || o.Service == k.Service) {
			return k, nil
		}
	}
	var have, elsewhere []string
	for _, name := range services.Names() {
		var in []string
		for _, k := range Kits {
			if k.Service == name {
				in = append(in, k.Lang)
			}
		}
		switch {
		case slices.Contains(in, o.Lang):
			have = append(have, name)
		case len(in) > 0:
			elsewhere = append(elsewhere, fmt.Sprintf("%s (%s)", name, strings.Join(in, ", ")))
		}
	}
	if !slices.Contains(services.Names(), o.Service) {
		return Kit{}, fmt.Errorf("--service %q: not a lock service lockcheck runs; valid services: %s", o.Service, strings.Join(services.Names(), ", "))
	}
	change := "its design file's service: and its client"
	if o.Lang == "go" {
		// A Go check has no design file: the design is registered in Go.
		change = "the Service of its lockchecktest.Design and its client"
	}
	return Kit{}, fmt.Errorf("--service %q: the %s templates run on %s; templates for other services: %s (a lock on %s in %s: start from "+
		"the nearest template and change %s)", o.Service, o.Lang, strings.Join(have, ", "), strings.Join(elsewhere, "; "), o.Service, o.Lang, change)
}

// design is the template's lock design as lockcheck sees it.
func (k Kit) design() locks.Design {
	return locks.ExternalDesign(locks.Program{Name: DesignName, Command: k.command, Service: k.Service, Nodes: 1, Token: k.token})
}

// Column is one scenario of the set: a matrix column that applies to the design.
type Column struct {
	Fault, Claims, Summary string
}

// Plan returns the files of the starter set for o, the columns its scenarios cover, and the
// command to run next.
func Plan(o Options) ([]File, []Column, string, error) {
	k, err := kit(o)
	if err != nil {
		return nil, nil, "", err
	}
	if o.Dir == "" {
		o.Dir = "lockcheck"
	}
	if o.Workflow == "" {
		o.Workflow = filepath.Join(".github", "workflows", "lockcheck.yml")
	}
	d := k.design()
	var files []File
	for _, f := range k.files {
		text, err := templates.ReadFile(path.Join("templates", k.Lang+"-"+k.Service, f))
		if err != nil {
			return nil, nil, "", err
		}
		mode := fs.FileMode(0o644)
		if k.Lang == "program" || strings.HasSuffix(f, ".py") {
			mode = 0o755
		}
		if k.Lang == "go" {
			text = []byte(strings.ReplaceAll(string(text), "package mylock_test", "package "+goPackage(o.Dir)+"_test"))
		}
		// Go templates are kept as .tmpl, so that go build, vet and test of lockcheck leave them be.
		files = append(files, File{Path: filepath.Join(o.Dir, strings.TrimSuffix(f, ".tmpl")), Text: text, Mode: mode})
	}
	columns, scenarioFiles, err := scenarioSet(d, o.Dir, k.Lang == "go")
	if err != nil {
		return nil, nil, "", err
	}
	files = append(files, scenarioFiles...)
	if k.Lang == "go" {
		// The set is the test's table of checks, one per column.
		for i, f := range files {
			if strings.HasSuffix(f.Path, "lockcheck_test.go") {
				text, err := format.Source([]byte(strings.Replace(string(f.Text), "\t// COLUMNS\n", goChecks(columns), 1)))
				if err != nil {
					return nil, nil, "", fmt.Errorf("the Go template: %w", err)
				}
				files[i].Text = text
			}
		}
	} else {
		files = append(files, File{Path: filepath.Join(o.Dir, DesignName+".yaml"), Text: designFile(k), Mode: 0o644})
	}
	if o.Workflow != "-" {
		files = append(files, File{Path: o.Workflow, Text: workflow(k, o), Mode: 0o644})
	}
	next := "lockcheck run " + filepath.Join(o.Dir, "scenarios", "no-faults.yaml")
	if k.Lang == "go" {
		next = "go mod tidy && go test -run TestMyLock/none ./" + filepath.ToSlash(o.Dir) + "/"
	}
	return files, columns, next, nil
}

// goPackage is a package name made of the folder's last element.
func goPackage(dir string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(filepath.Base(filepath.Clean(dir))) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' && b.Len() > 0 {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "lockcheck"
	}
	return b.String()
}

// scenarioSet is a scenario per matrix column that applies to d (none is the control, named
// no-faults), with what a gate requires of each; for Go, only the columns (its test holds the set).
func scenarioSet(d locks.Design, dir string, columnsOnly bool) ([]Column, []File, error) {
	var columns []Column
	var files []File
	for _, f := range matrix.Faults {
		na, err := matrix.Applies(d, f.Name)
		if err != nil {
			return nil, nil, err
		}
		if na != "" {
			continue
		}
		columns = append(columns, Column{Fault: f.Name, Claims: strings.Join(f.Claims, ", "), Summary: f.Summary})
		if columnsOnly {
			continue
		}
		text, _, err := matrix.ScenarioText(d, f.Name, 1)
		if err != nil {
			return nil, nil, err
		}
		name := f.Name
		if name == "none" {
			name = "no-faults"
		}
		files = append(files, File{Path: filepath.Join(dir, "scenarios", name+".yaml"), Text: scenarioFile(d, f, name, text), Mode: 0o644})
	}
	if len(columns) == 0 {
		return nil, nil, errors.New("no matrix column applies to the template design")
	}
	return columns, files, nil
}

// scenarioFile turns a matrix cell's text into a scenario of the set: named after its file,
// running the design file, with the verdict the gate requires.
func scenarioFile(d locks.Design, f matrix.Fault, name, cell string) []byte {
	var b strings.Builder
	what := f.Summary
	if len(f.Claims) > 0 {
		what = strings.Join(f.Claims, ", ") + ": " + what
	}
	fmt.Fprintf(&b, "# %s\n# Written by lockcheck init from its matrix column %q, scaled to the design's lease.\n", what, f.Name)
	for _, line := range strings.Split(strings.TrimSuffix(cell, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "name: "):
			fmt.Fprintf(&b, "name: %s\n", name)
		case strings.HasPrefix(line, "description: "):
			fmt.Fprintf(&b, "description: %q\n", f.Summary)
		case strings.HasPrefix(line, "lock: "):
			fmt.Fprintf(&b, "lock: ../%s.yaml   # the design file, relative to this file\n", DesignName)
		default:
			b.WriteString(line + "\n")
		}
	}
	b.WriteString(expectBlock(d, f.Name == "none"))
	return []byte(b.String())
}

// expectBlock is what the gate requires. With no fault, a lock must be right on its own: mutual
// exclusion, every register correct, and it must be taken often. Under a fault a lease may
// lose its holder (a pause past its TTL: K2), so the gate asks what fencing can promise: the
// register that checks tokens on reads and writes stays correct, and the lock is not stuck. A
// design without a token has only its unfenced register to answer for.
func expectBlock(d locks.Design, control bool) string {
	var b strings.Builder
	b.WriteString("# What the CI gate requires (lockcheck run exits 1 otherwise). Edit it to what you require of your lock.\nexpect:\n")
	registers := []string{"fenced-rw"}
	switch {
	case control && d.HasToken():
		b.WriteString("  mutual_exclusion: holds\n")
		registers = []string{"unfenced", "fenced-write", "fenced-rw"}
	case control:
		b.WriteString("  mutual_exclusion: holds\n")
		registers = []string{"unfenced"}
	case !d.HasToken():
		registers = []string{"unfenced"}
	}
	b.WriteString("  registers:\n")
	for _, r := range registers {
		fmt.Fprintf(&b, "    %-13s {linearizable: true, lost_updates: false}\n", r+":")
	}
	if control {
		b.WriteString("  liveness: {stuck: false, min_acquisitions: 5}   # a control that never takes the lock proves nothing\n")
	} else {
		b.WriteString("  liveness: {stuck: false}\n")
	}
	return b.String()
}

// designFile is the template's design file: the program and what it is.
func designFile(k Kit) []byte {
	var cmd []string
	for _, c := range k.command {
		cmd = append(cmd, yamlScalar(c))
	}
	return []byte(fmt.Sprintf(`# The lock design lockcheck checks: a program speaking the lock-client protocol (lockcheck's
# docs/LOCK-PROTOCOL.md). Relative paths in command are relative to this file's folder, where
# the program runs (dir: changes that).
name: %s
summary: our lock, through %s
command: [%s]
service: %s          # the lock service lockcheck starts for it
nodes: 1
token: %s   # the fencing token it hands out, or none
expires: true           # a lease or session that ends by itself: scenarios give it a ttl
`, DesignName, k.files[0], strings.Join(cmd, ", "), k.Service, yamlScalar(k.token)))
}

// yamlScalar quotes s when YAML would read it as something else.
func yamlScalar(s string) string {
	if s == "" || strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`") || strings.HasPrefix(s, "-") && len(s) > 1 && s[1] == ' ' {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// goChecks are the Go test's table entries, one per column but the control (written already).
func goChecks(columns []Column) string {
	var b strings.Builder
	for _, c := range columns {
		if c.Fault == "none" {
			continue
		}
		comment := c.Summary
		if c.Claims != "" {
			comment = c.Claims + ": " + comment
		}
		fmt.Fprintf(&b, "\t\t{%q, required}, // %s\n", c.Fault, comment)
	}
	return b.String()
}

// Write writes the files, creating folders; it refuses, before writing anything, to overwrite
// a file unless force.
func Write(files []File, force bool) error {
	if !force {
		var exist []string
		for _, f := range files {
			if _, err := os.Lstat(f.Path); err == nil {
				exist = append(exist, f.Path)
			}
		}
		if len(exist) > 0 {
			return fmt.Errorf("not overwriting %s (--force overwrites)", strings.Join(exist, ", "))
		}
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f.Path, f.Text, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(f.Path, f.Mode); err != nil { // an overwritten file keeps its old mode otherwise
			return err
		}
	}
	return nil
}
