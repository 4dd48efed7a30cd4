package scenarios

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every scenario file of this folder, in any subfolder, is built into lockcheck: a file left out
// by the embed patterns would work in the repository and be missing everywhere else.
func TestShippedEmbedsEveryScenarioFile(t *testing.T) {
	var onDisk []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".json")) {
			onDisk = append(onDisk, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	embedded := append(shippedFiles(), shippedOthers()...)
	for _, f := range onDisk {
		if !slices.Contains(embedded, f) {
			t.Errorf("%s is not built into lockcheck: widen the go:embed patterns in shipped.go", f)
		}
	}
	if len(shippedFiles()) < 100 {
		t.Errorf("only %d shipped scenarios embedded", len(shippedFiles()))
	}
}

// Every shipped scenario loads from the built-in copy, named after its file, with a description
// (the first thing `lockcheck scenarios` shows).
func TestEveryShippedScenarioLoadsFromTheBinary(t *testing.T) {
	for _, s := range Shipped() {
		if strings.HasPrefix(s.Description, "does not load") {
			t.Errorf("%s: %s", s.Name, s.Description)
			continue
		}
		src, _ := ShippedSource(s.Name + ".yaml")
		sc, err := Parse(s.Name+".yaml", src)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Name != filepath.Base(s.Name) {
			t.Errorf("%s: name %q does not match the file name", s.Name, sc.Name)
		}
		if s.Description == "" {
			t.Errorf("%s: no description", s.Name)
		}
	}
}

// A shipped scenario that expects two holders says which class of double ownership it shows
// (outlived, explained, broken), so that make test holds each claim to its class: a K2 scenario
// whose window turned into a broken promise, or a bug's whose turned into K2, fails its run.
func TestShippedScenariosThatExpectTwoHoldersNameTheClass(t *testing.T) {
	for _, s := range Shipped() {
		src, _ := ShippedSource(s.Name + ".yaml")
		sc, err := Parse(s.Name+".yaml", src)
		if err != nil {
			t.Fatal(err)
		}
		if e := sc.Expect; e.MutualExclusion == "violated" && e.DoubleOwnership == "" && e.Promises == "" {
			t.Errorf("%s expects mutual_exclusion: violated but names no class (double_ownership: outlived, explained or broken)", s.Name)
		}
	}
}

// Names are looked up in order: a file as given, the current folder's scenarios/ (one folder
// down too), then the shipped scenarios; a path-like argument is only ever a path.
func TestResolveLooksUpFilesThenLocalThenShipped(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	t.Chdir(dir)
	write := func(p, text string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache, err := ShippedDir()
	if err != nil {
		t.Fatal(err)
	}
	shippedK2 := filepath.Join(cache, "debate", "k2-set-nx-px.yaml")
	cases := []struct {
		arg, want string
	}{
		{"k2-set-nx-px", shippedK2},
		{"k2-set-nx-px.yaml", shippedK2},
		{"debate/k2-set-nx-px", shippedK2},
		{"scenarios/debate/k2-set-nx-px.yaml", shippedK2},
		{"no-faults-set-nx-px", filepath.Join(cache, "no-faults-set-nx-px.yaml")},
	}
	for _, c := range cases {
		if got, err := Resolve(c.arg); err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.arg, got, err, c.want)
		}
	}
	if b, err := os.ReadFile(shippedK2); err != nil || !strings.Contains(string(b), "name: k2-set-nx-px") {
		t.Errorf("the shipped copy in the cache: %v", err)
	}

	// A scenario of the current folder's scenarios/ wins over a shipped one of the same name,
	// and a file given as a path over both.
	write("scenarios/mine/k2-set-nx-px.yaml", "name: k2-set-nx-px\n")
	write("k2-set-nx-px", "a file named like the scenario\n")
	if got, _ := Resolve("debate/k2-set-nx-px"); got != shippedK2 {
		t.Errorf("debate/k2-set-nx-px: %q, want the shipped one (the local one is in mine/)", got)
	}
	if got, _ := Resolve("k2-set-nx-px.yaml"); got != filepath.Join("scenarios", "mine", "k2-set-nx-px.yaml") {
		t.Errorf("k2-set-nx-px.yaml: %q, want the local scenarios/mine/ one", got)
	}
	if got, _ := Resolve("k2-set-nx-px"); got != "k2-set-nx-px" {
		t.Errorf("k2-set-nx-px: %q, want the file of that name", got)
	}

	// A bare name in two local folders is ambiguous: the error names both.
	write("scenarios/other/twice.yaml", "")
	write("scenarios/more/twice.yaml", "")
	if _, err := Resolve("twice"); err == nil || !strings.Contains(err.Error(), "more/twice.yaml, other/twice.yaml") {
		t.Errorf("ambiguous name: %v", err)
	}

	for arg, want := range map[string]string{
		"k2-set-nx-pxx":        `no scenario "k2-set-nx-pxx": not a file, not in ./scenarios/, not shipped with lockcheck; nearest shipped scenarios: debate/k2-set-nx-px,`,
		"./k2-set-nx-pxx.yaml": "scenario ./k2-set-nx-pxx.yaml: no such file; nearest shipped scenarios: debate/k2-set-nx-px,",
		"../x/../../etc":       "no such file",
		"zzzzzzzzzzzzzzzzzzzz": "lockcheck scenarios lists the shipped ones",
	} {
		if _, err := Resolve(arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%q): %v, want %q", arg, err, want)
		}
	}
}

func TestNearestNamesAreTheClosestSlips(t *testing.T) {
	names := []string{"debate/k2-set-nx-px", "debate/k3-set-nx-px", "no-faults-redlock", "debate/k2-redlock", "fairness-zk"}
	got := Nearest("k2-set-nx-pxx", names, 2)
	if !slices.Equal(got, []string{"debate/k2-set-nx-px", "debate/k3-set-nx-px"}) {
		t.Errorf("nearest to k2-set-nx-pxx: %v", got)
	}
	if got := Nearest("redlock", names, 3); len(got) == 0 || got[0] != "debate/k2-redlock" && got[0] != "no-faults-redlock" {
		t.Errorf("nearest to redlock: %v", got)
	}
	if got := Nearest("completely-different-words", names, 3); len(got) != 0 {
		t.Errorf("nothing is near: %v", got)
	}
}

// A command whose default is a folder of this repository (lockcheck debate's scenarios/debate)
// gets the shipped copy where the folder is not on disk, and the folder itself where it is.
func TestShippedFolderFallsBackToTheShippedCopy(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	dir, err := ShippedFolder("scenarios/debate")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "k2-set-nx-px.yaml")); err != nil {
		t.Errorf("the shipped debate folder %s: %v", dir, err)
	}
	if f, err := ShippedFolder("scenarios/debate/repeatability.json"); err != nil || filepath.Dir(f) != dir {
		t.Errorf("the shipped repeatability record: %q, %v", f, err)
	}
	for _, same := range []string{"elsewhere/debate", "scenarios/no-such-folder"} {
		if got, _ := ShippedFolder(same); got != same {
			t.Errorf("ShippedFolder(%q) = %q, want it unchanged", same, got)
		}
	}
	os.MkdirAll("scenarios/debate", 0o755)
	if got, _ := ShippedFolder("scenarios/debate"); got != "scenarios/debate" {
		t.Errorf("a folder on disk: %q, want it unchanged", got)
	}
}
