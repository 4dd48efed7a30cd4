// Package layers checks which way the module's imports point. tools/ (the developer programs and
// checks) sits on top of everything: no package outside it may import it. internal/ sits beneath
// lockcheck's own packages: each of its packages must be imported by one outside tools/ (a test
// counts), else it belongs with the tools. The repository's own check is this package's test.
package layers

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Imports maps each package of the module at root (by its path relative to root, "." for the
// root, slash-separated) to the module's packages its files import, its tests' included. Files
// are read whatever their build tags, so a file built only with -tags mutants counts too.
// testdata, hidden folders and nested modules are not part of the module.
func Imports(root string) (map[string][]string, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	sets := map[string]map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || isModule(p)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if sets[pkg] == nil {
			sets[pkg] = map[string]bool{}
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if imp == module {
				sets[pkg]["."] = true
			} else if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				sets[pkg][rest] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for pkg, set := range sets {
		out[pkg] = sortedKeys(set)
	}
	return out, nil
}

// Check returns one problem for each import that reaches up into tools/ from outside it, and for
// each package under internal/ that no package outside tools/ imports.
func Check(imports map[string][]string) []string {
	var problems []string
	importedBy := map[string][]string{}
	for _, pkg := range sortedKeys(imports) {
		for _, imp := range imports[pkg] {
			if imp == pkg {
				continue // a package's own external tests
			}
			importedBy[imp] = append(importedBy[imp], pkg)
			if under(imp, "tools") && !under(pkg, "tools") {
				problems = append(problems, fmt.Sprintf("%s imports %s: nothing outside tools/ may import a tool", pkg, imp))
			}
		}
	}
	for _, pkg := range sortedKeys(imports) {
		by := importedBy[pkg]
		switch {
		case !under(pkg, "internal") || slices.ContainsFunc(by, func(p string) bool { return !under(p, "tools") }):
		case len(by) > 0:
			problems = append(problems, fmt.Sprintf("%s is imported only by tools (%s): move it under tools/", pkg, strings.Join(by, ", ")))
		default:
			problems = append(problems, fmt.Sprintf("%s is imported by no package: internal/ holds only what lockcheck's own packages import", pkg))
		}
	}
	return problems
}

// under reports whether pkg is dir or inside it.
func under(pkg, dir string) bool {
	return pkg == dir || strings.HasPrefix(pkg, dir+"/")
}

func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return path.Clean(strings.Trim(strings.TrimSpace(rest), `"`)), nil
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
