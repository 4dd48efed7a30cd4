package main

// lockcheck init --lang go --library MODULE@VERSION: a Go adapter of a library lockcheck does not
// ship, and the design file that builds it at any version (locks/gosource.go).

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/lockcheck/lockcheck/internal/starter"
	"github.com/lockcheck/lockcheck/locks"
)

func initLibrary(out io.Writer, o starter.Options, library string, force bool) error {
	module, version, _ := strings.Cut(library, "@")
	switch {
	case o.Lang != "go":
		return &exitError{exitHarness, fmt.Errorf("--library takes --lang go (a Go adapter of the library), not %q", o.Lang)}
	case module == "" || !strings.Contains(module, "/"):
		return &exitError{exitHarness, fmt.Errorf("--library %q: give the library's module and a version, e.g. github.com/bsm/redislock@v0.9.4", library)}
	}
	if version != "" {
		version = "v" + strings.TrimPrefix(version, "v")
	}
	if msg := locks.CheckVersion(version); msg != "" {
		return &exitError{exitHarness, fmt.Errorf("--library %s: %s", library, msg)}
	}
	kit, err := starter.LibraryKitFor(o.Service)
	if err != nil {
		return &exitError{exitHarness, err}
	}
	name := libraryName(module)
	design := filepath.Join(o.Dir, name+".yaml")
	source := filepath.Join(o.Dir, name+"_adapter.go")
	pkg, said, err := libraryPackage(module, version, filepath.Base(source))
	if err != nil {
		return &exitError{exitHarness, fmt.Errorf("--library %s: %w", library, err)}
	}
	adapter, err := kit.Adapter(name, module, pkg)
	if err != nil {
		return &exitError{exitHarness, err}
	}
	files := []starter.File{
		{Path: design, Mode: 0o644, Text: []byte(fmt.Sprintf(libraryDesign, module, name, name, kit.Lock, kit.Service, kit.Nodes, kit.Token, kit.DesignLines(), name, module, version))},
		{Path: source, Mode: 0o644, Text: adapter},
	}
	if err := starter.Write(files, force); err != nil {
		return &exitError{exitHarness, err}
	}
	for _, f := range files {
		fmt.Fprintf(out, "wrote %s\n", f.Path)
	}
	fmt.Fprintf(out, "\n%s\n", said)
	fmt.Fprintf(out, "\nnext: put %s's calls in %s_adapter.go, then\n  lockcheck matrix --locks %s@%s,%s@NEXT --baseline-lock %s@%s --faults %s\n",
		module, name, design, version, design, design, version, kit.Faults())
	return nil
}

// libraryPackage is the package of module at version the adapter imports (an import of a path with
// no package fails its first build), and a line saying which and how to change it. When the
// module cannot be looked into (offline, a version the proxy does not serve) it is the root
// package, and the line says so; a module with no package to import is an error.
func libraryPackage(module, version, source string) (string, string, error) {
	dir, err := starter.ModuleDir(module, version)
	if err != nil {
		return module, fmt.Sprintf("%s imports %s, the module's root package: could not look into %s %s (%v); if its code is in "+
			"a subpackage, import that one", source, module, module, version, err), nil
	}
	p, err := starter.ChooseLibraryPackage(dir, module)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", version, err)
	}
	said := fmt.Sprintf("%s imports %s, %s; to call another package, change that import", source, p.Path, p.Why)
	if len(p.Others) > 0 {
		said += " (its others: " + strings.Join(p.Others, ", ") + ")"
	}
	return p.Path, said, nil
}

// libraryName is a design's name for a module: its last element, without a major version suffix
// (github.com/go-redsync/redsync/v4: redsync).
func libraryName(module string) string {
	base := path.Base(module)
	if regexp.MustCompile(`^v[0-9]+$`).MatchString(base) && strings.Contains(module, "/") {
		base = path.Base(path.Dir(module))
	}
	base = regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(base, "-")
	if strings.Trim(base, "-") == "" {
		return "my-lock"
	}
	return base
}

const libraryDesign = `# %s at any version: lockcheck builds %s_adapter.go (with its lockproto.go,
# the lock-client protocol) against the library at the version named with this file,
# %s.yaml@VERSION, or at go.version. Built programs are kept in ~/.cache/lockcheck/go-adapters/.
# The adapter's template: %s; put the library's calls in its place.
service: %s
nodes: %d
token: %s           # the fencing token the adapter hands out, or none
%sgo:
  source: %s_adapter.go
  module: %s
  version: %s
`
