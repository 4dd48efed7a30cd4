package main

import (
	"bytes"
	"go/format"
	"os"
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
	src, err := os.ReadFile(filepath.Join(dir, "redislock_adapter.go"))
	if err != nil {
		t.Fatal(err)
	}
	if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
		t.Errorf("the adapter is not gofmt'ed (%v)", err)
	}
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
