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

// A module whose code is in subpackages (redigo: redis/ and redisx/, nothing at its root) gets an
// adapter that imports one of them, which builds; init says which and how to change it.
func TestInitLibraryImportsAPackageTheModuleHas(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := initLibrary(&out, starter.Options{Lang: "go", Dir: dir}, "github.com/gomodule/redigo@v1.9.3", false); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "redigo_adapter.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `_ "github.com/gomodule/redigo/redis"`) || strings.Contains(string(src), `_ "github.com/gomodule/redigo"`) {
		t.Errorf("the adapter does not import redigo's redis package:\n%s", src)
	}
	if !strings.Contains(out.String(), "redigo_adapter.go imports github.com/gomodule/redigo/redis, its shallowest package (the module has no "+
		"package at its root, and none named for a lock); to call another package, change that import (its others: github.com/gomodule/redigo/redisx)") {
		t.Errorf("init does not say which package it imports:\n%s", out.String())
	}
	assertGofmted(t, filepath.Join(dir, "redigo_adapter.go"))
	d, err := locks.Get(filepath.Join(dir, "redigo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Prepare(); err != nil {
		t.Fatalf("the adapter does not build: %v", err)
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

// A module's root package is imported when it has one; otherwise its shallowest package named for
// a lock, otherwise its shallowest package. Tests, main packages, internal/, examples, test data,
// nested modules and files the adapter's build leaves out (cgo, another OS) do not count.
func TestChooseLibraryPackage(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string // path: package clause and what follows
		want  string
	}{
		{"a root package", map[string]string{"a.go": "package a", "concurrency/c.go": "package concurrency"}, "m"},
		{"only tests and a main at the root", map[string]string{"a_test.go": "package a", "main.go": "package main",
			"client/c.go": "package client"}, "m/client"},
		{"a lock word beats a shallower package", map[string]string{"client/c.go": "package client",
			"client/recipes/mutex/m.go": "package mutex"}, "m/client/recipes/mutex"},
		{"the shallowest lock word, lock before sync", map[string]string{"x/sync/s.go": "package sync", "x/redislock/r.go": "package redislock",
			"a/b/lock/l.go": "package lock"}, "m/x/redislock"},
		{"the shallowest, then the first path", map[string]string{"redisx/x.go": "package redisx", "redis/r.go": "package redis",
			"redis/deep/d.go": "package deep"}, "m/redis"},
		{"what an adapter cannot import is passed over", map[string]string{
			"internal/lock/l.go":   "package lock",
			"examples/lock/l.go":   "package lock",
			"testdata/lock/l.go":   "package lock",
			"lockd/main.go":        "package main",
			"lockv2/go.mod":        "module m/lockv2",
			"lockv2/l.go":          "package lockv2",
			"cgolock/l.go":         "package cgolock\n\nimport \"C\"",
			"winlock/l_windows.go": "package winlock",
			"store/s.go":           "package store"}, "m/store"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, text := range c.files {
				full := filepath.Join(dir, p)
				os.MkdirAll(filepath.Dir(full), 0o755)
				if err := os.WriteFile(full, []byte(text+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := starter.ChooseLibraryPackage(dir, "m")
			if err != nil || got.Path != c.want {
				t.Fatalf("chose %+v (%v), want %s", got, err, c.want)
			}
		})
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "cmd", "tool"), 0o755)
	os.WriteFile(filepath.Join(dir, "cmd", "tool", "main.go"), []byte("package main\n"), 0o644)
	if got, err := starter.ChooseLibraryPackage(dir, "m"); err == nil || !strings.Contains(err.Error(), "m has no Go package an adapter can import") {
		t.Errorf("a module of commands only: %+v, %v", got, err)
	}
}

// Real modules, as the proxy serves them (already in this repository's go.sum, so in the module
// cache): redigo keeps its code in redis/ and redisx/, with no root package; etcd's client has
// concurrency/, but a package at its root, which is the one imported.
func TestChooseLibraryPackageOfRealModules(t *testing.T) {
	for _, c := range []struct{ module, version, want, why string }{
		{"github.com/gomodule/redigo", "v1.9.3", "github.com/gomodule/redigo/redis", "its shallowest package (the module has no package at its root"},
		{"go.etcd.io/etcd/client/v3", "v3.5.35", "go.etcd.io/etcd/client/v3", "the module's root package"},
	} {
		dir, err := starter.ModuleDir(c.module, c.version)
		if err != nil {
			t.Fatal(err)
		}
		got, err := starter.ChooseLibraryPackage(dir, c.module)
		if err != nil || got.Path != c.want || !strings.HasPrefix(got.Why, c.why) {
			t.Errorf("%s@%s: %+v (%v), want %s: %s", c.module, c.version, got, err, c.want, c.why)
		}
	}
	if _, err := starter.ModuleDir("github.com/gomodule/redigo", "v9.9.9"); err == nil || !strings.Contains(err.Error(), "go mod download github.com/gomodule/redigo@v9.9.9: ") {
		t.Errorf("a version the proxy does not serve: %v", err)
	}
}
