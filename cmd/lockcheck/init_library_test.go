package main

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/starter"
	"github.com/lockcheck/lockcheck/locks"
)

// init --lang go --library MODULE@VERSION writes a gofmt'ed adapter and a design file that loads
// as NAME@VERSION at the version given and at another; the adapter builds against the library.
func TestInitLibraryWritesADesignThatBuildsAtAnyVersion(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := initLibrary(&out, starter.Options{Lang: "go", Dir: dir}, "github.com/bsm/redislock@0.9.3", false); err != nil {
		t.Fatal(err)
	}
	assertGofmted(t, filepath.Join(dir, "redislock_adapter.go"))
	design := filepath.Join(dir, "redislock.yaml")
	for _, c := range []struct{ name, want string }{{design, "redislock@v0.9.3"}, {design + "@v0.9.4", "redislock@v0.9.4"}} {
		d, err := locks.Get(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if d.Name != c.want || d.Token != "INCR" || d.Prepare == nil {
			t.Errorf("%s: design %s, token %s, prepare %v; want %s with INCR, built first", c.name, d.Name, d.Token, d.Prepare != nil, c.want)
		}
	}
	d, _ := locks.Get(design)
	if err := d.Prepare(); err != nil {
		t.Fatalf("the template does not build: %v", err)
	}
	if !strings.Contains(out.String(), "lockcheck matrix --locks "+design+"@v0.9.3,"+design+"@NEXT --baseline-lock "+design+"@v0.9.3") {
		t.Errorf("init does not say what to run next:\n%s", out.String())
	}
	if err := initLibrary(&out, starter.Options{Lang: "go", Dir: dir}, "github.com/bsm/redislock@v0.9.3", false); err == nil {
		t.Error("a second init overwrote the files")
	}
	for _, c := range []struct {
		lang, library, want string
	}{
		{"python", "github.com/bsm/redislock@v0.9.3", "--library takes --lang go"},
		{"go", "redislock", "give the library's module and a version"},
		{"go", "github.com/bsm/redislock", "missing: the library's version"},
	} {
		err := initLibrary(&out, starter.Options{Lang: c.lang, Dir: t.TempDir()}, c.library, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--lang %s --library %s: %v; want %q", c.lang, c.library, err, c.want)
		}
	}
	if got := libraryName("github.com/go-redsync/redsync/v4"); got != "redsync" {
		t.Errorf("libraryName of redsync/v4 = %q", got)
	}
}

// init --lang go --library M@V --service S writes, for every service with a template, an adapter
// that is a correct lock on that service as written: built against the library at its version
// and run with no fault against the real service, it keeps mutual exclusion.
func TestInitLibraryHasATemplateForEveryServiceThatPassesItsControl(t *testing.T) {
	if testing.Short() {
		t.Skip("builds adapters and runs real servers")
	}
	bin := lockcheck(t)
	for _, kit := range starter.LibraryKits {
		t.Run(kit.Service, func(t *testing.T) {
			dir := t.TempDir()
			for _, d := range []string{dir, filepath.Dir(dir)} {
				os.Chmod(d, 0o755) // a database run as its own user when we are root must reach its folder
			}
			var out bytes.Buffer
			if err := initLibrary(&out, starter.Options{Lang: "go", Dir: dir, Service: kit.Service}, "github.com/bsm/redislock@v0.9.4", false); err != nil {
				t.Fatal(err)
			}
			assertGofmted(t, filepath.Join(dir, "redislock_adapter.go"))
			design := filepath.Join(dir, "redislock.yaml")
			d, err := locks.Get(design)
			if err != nil {
				t.Fatal(err)
			}
			if d.Service != kit.Service || d.Token != kit.Token {
				t.Errorf("design on %s with token %q; want %s, %q", d.Service, d.Token, kit.Service, kit.Token)
			}
			scenario := filepath.Join(dir, "control.yaml")
			text := "name: control\nlock: redislock.yaml\nclients: 3\nduration: 3s\nttl: 2s\n" +
				"expect: {mutual_exclusion: holds, liveness: {stuck: false}}\n"
			if err := os.WriteFile(scenario, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			run, err := exec.Command(bin, "run", "--results", filepath.Join(dir, "results"), scenario).CombinedOutput()
			if err != nil || !strings.Contains(string(run), "verdict matches expect") {
				t.Fatalf("the %s template's control: %v\n%s", kit.Service, err, run)
			}
		})
	}
	if _, err := starter.LibraryKitFor("memcached"); err == nil || !strings.Contains(err.Error(), "valid services: redis, zookeeper") {
		t.Errorf("an unknown service: %v", err)
	}
}

// assertGofmted fails t unless the Go file at path is as gofmt writes it.
func assertGofmted(t *testing.T, path string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
		t.Errorf("%s is not gofmt'ed (%v)", filepath.Base(path), err)
	}
}
