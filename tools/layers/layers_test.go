package layers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The repository's imports point one way: nothing outside tools/ imports a tool, and every
// package under internal/ is imported by one of lockcheck's own packages.
func TestToolsOnTopInternalBeneath(t *testing.T) {
	imports, err := Imports(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// The walk found the module: its CLI, a helper under internal/ and the tools.
	for _, pkg := range []string{"cmd/lockcheck", "internal/proc", "tools/lockbench", "tools/layers"} {
		if _, ok := imports[pkg]; !ok {
			t.Fatalf("no package %s among the %d found", pkg, len(imports))
		}
	}
	if !slices.Contains(imports["tools/lockbench"], "runner") {
		t.Errorf("tools/lockbench imports %v: the module's own imports were not resolved", imports["tools/lockbench"])
	}
	for _, p := range Check(imports) {
		t.Error(p)
	}
}

// Check names an import up into tools/, a helper under internal/ that only tools import, and one
// nobody imports; tests of a package's own, and tools importing internal/, are fine.
func TestCheckCatchesEachWrongWay(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                          "module example.com/m\n\ngo 1.26\n",
		"main.go":                         "package main\nimport _ \"example.com/m/internal/used\"\nfunc main() {}\n",
		"lib/lib.go":                      "package lib\nimport _ \"example.com/m/tools/bench\"\n",
		"lib/lib_test.go":                 "package lib_test\nimport _ \"example.com/m/lib\"\n",
		"internal/used/used.go":           "package used\n",
		"internal/fortools/fortools.go":   "package fortools\n",
		"internal/orphan/orphan.go":       "package orphan\n",
		"internal/orphan/orphan_test.go":  "package orphan_test\nimport _ \"example.com/m/internal/orphan\"\n",
		"internal/testonly/testonly.go":   "package testonly\n",
		"lib/helper_test.go":              "package lib\nimport _ \"example.com/m/internal/testonly\"\n",
		"tools/bench/main.go":             "package main\nimport (\n_ \"example.com/m/internal/used\"\n_ \"example.com/m/internal/fortools\"\n)\n",
		"tools/bench/testdata/x/x.go":     "package x\nimport _ \"example.com/m/internal/orphan\"\n",
		"nested/go.mod":                   "module example.com/nested\n",
		"nested/n.go":                     "package nested\nimport _ \"example.com/m/tools/bench\"\n",
		"internal/tagged/tagged.go":       "//go:build never\n\npackage tagged\n",
		"lib/tagged.go":                   "//go:build never\n\npackage lib\nimport _ \"example.com/m/internal/tagged\"\n",
		"internal/unparsed/notgo.go.tmpl": "package unparsed\n",
	}
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	imports, err := Imports(root)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(Check(imports), "\n")
	want := []string{
		"lib imports tools/bench: nothing outside tools/ may import a tool",
		"internal/fortools is imported only by tools (tools/bench): move it under tools/",
		"internal/orphan is imported by no package: internal/ holds only what lockcheck's own packages import",
	}
	if got != strings.Join(want, "\n") {
		t.Errorf("Check found:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
