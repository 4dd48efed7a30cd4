package locks

// gosource.go: a Go lock library lockcheck does not ship, at any version. The user writes a Go
// adapter (package main) against the library and lockcheck's lock-client protocol helper
// (adapters/_go/lockproto.go, which the build adds), and names it in a design file's go: section
// with the library's module; NAME.yaml@VERSION builds it against the library at VERSION exactly as
// LIB@VERSION builds a shipped adapter (adapters.GoBinary, into the user's cache), and runs it
// through the lock-client protocol.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/adapters"
)

// GoSource is a design file's go: section.
type GoSource struct {
	// Source is the adapter: one Go file of package main, relative to the design file (absolute
	// once loaded).
	Source string `json:"source" yaml:"source"`
	// Module is the library's module path; Version the version to build against when the design
	// file is named without @VERSION.
	Module  string `json:"module" yaml:"module"`
	Version string `json:"version,omitempty" yaml:"version"`
}

// CheckVersion says what is wrong with a version as a design names it ("" when nothing): a
// release tag vMAJOR.MINOR.PATCH[-PRE] or a pseudo-version.
func CheckVersion(v string) string {
	if v == "" {
		return "missing: the library's version to build against (go.version, or NAME.yaml@VERSION)"
	}
	if _, ok := parseVersion(v); !ok || v[0] != 'v' {
		return fmt.Sprintf("%q is not a version: write vMAJOR.MINOR.PATCH, e.g. v1.2.3 (or a pseudo-version v0.0.0-<date>-<commit>)", v)
	}
	return ""
}

func (g *GoSource) build(name string) adapters.GoBuild {
	return adapters.GoBuild{Source: g.Source, Module: g.Module, Version: g.Version, Label: name}
}

// design makes d, the design of program p, build and run the adapter; it is named NAME@VERSION.
func (g *GoSource) design(d *Design, p Program) {
	name := p.Name + "@" + g.Version
	d.Name = name
	b := g.build(name)
	d.Source = fmt.Sprintf("%s %s, built on first use with the Go adapter %s (+ lockcheck's lockproto.go), run through the lock-client protocol",
		g.Module, g.Version, filepath.Base(g.Source))
	d.Prepare = func() error { _, err := adapters.GoBinary(b); return err }
	d.New = func(env Env) (Lock, error) {
		bin, err := adapters.GoBinary(b)
		if err != nil {
			return nil, err
		}
		return StartProgram(name, []string{bin}, p.Dir, nil, env)
	}
}

// DesignFile loads the design a design file defines, at version when one is named (a design file
// with a go: section): what Get does with a name that is a design file (DesignFileName), so that
// lockcheck matrix --locks and a check take one. The scenario loader, which reads design files,
// sets it; a relative path is taken from the current folder.
var DesignFile func(path, version string) (Design, error)

// DesignFileName splits a name that is a design file, FILE.yaml or FILE.yaml@VERSION (.yml too),
// into the file and the version.
func DesignFileName(name string) (file, version string, ok bool) {
	for _, ext := range []string{".yaml", ".yml"} {
		if i := strings.LastIndex(name, ext+"@"); i >= 0 {
			return name[:i+len(ext)], name[i+len(ext)+1:], true
		}
		if strings.HasSuffix(name, ext) {
			return name, "", true
		}
	}
	return "", "", false
}
