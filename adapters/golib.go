package adapters

// golib.go: Go lock libraries at any version. A Go library compiled into lockcheck exists at one
// version; to run another, lockcheck builds a small adapter program against it: the adapter's
// source (the files in _go/, one main package per library API, never compiled into lockcheck:
// the go tool skips folders whose name starts with "_") goes into a throwaway module in the
// user's cache folder whose go.mod requires the library at that version; `go mod tidy` resolves
// what the library itself requires, `go build` makes the program, and the binary is kept, keyed
// by the adapter, the version and a hash of the source. Every later run finds it there.

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

//go:embed _go
var goSources embed.FS

// goDir is the folder of the Go adapters' sources in goSources.
const goDir = "_go"

// goProtocol is the protocol helper every Go adapter shares.
const goProtocol = "lockproto.go"

// goAdapters are the Go adapters: the files of each, besides the protocol helper.
var goAdapters = map[string][]string{
	"redsync-v4": {"redsync_v4.go"},
	"redsync-v1": {"redsync_v1.go"},
	"etcd-v33":   {"etcd_mutex.go", "etcd_v33.go", "renewals_etcd.go", "points_grpc.go"},
	"etcd-v34":   {"etcd_mutex.go", "etcd_v34.go", "renewals_etcd.go", "points_grpc.go"},
	"etcd-v35":   {"etcd_mutex.go", "etcd_v35.go", "renewals_etcd.go", "points_grpc.go"},
	"zk":         {"zk_lock.go", "renewals_zk.go"},
}

// goPins are modules a Go adapter's build takes at a version of their own (MODULE@VERSION),
// because the library builds only against them: etcd 3.3's client imports grpc/naming, which
// gRPC removed after v1.26. go get takes the library and the pins together, so that every other
// requirement is chosen to agree with them before go mod tidy runs.
var goPins = map[string][]string{
	"etcd-v33": {"google.golang.org/grpc@v1.26.0"},
}

// goVersionLine is the go directive of the throwaway modules: the oldest go tool that builds them.
const goVersionLine = "1.21"

// GoBuild is one versioned adapter: a Go adapter's source built against Module at Version.
type GoBuild struct {
	Adapter string // a Go adapter's name (GoAdapters)
	// Source, instead of Adapter, is a user's adapter: a Go file of package main (an absolute
	// path) written against the library and the protocol helper, which the build adds.
	Source  string
	Module  string // the library's module path
	Version string // the version as the module proxy serves it
	Label   string // how messages name it, e.g. "redsync@v4.0.3"
}

// sources are the files of b's program by name, and their names in order (the protocol helper
// first): the order keys the build, as it has since the shipped adapters were first built.
func (b GoBuild) sources() ([]string, map[string][]byte, error) {
	names := GoFiles(b.Adapter)
	if b.Source != "" {
		names = []string{goProtocol}
	} else if names == nil {
		return nil, nil, fmt.Errorf("%s: no Go adapter %q; Go adapters: %s", b.Label, b.Adapter, strings.Join(GoAdapters(), ", "))
	}
	out := map[string][]byte{}
	for _, f := range names {
		src, err := goSources.ReadFile(goDir + "/" + f)
		if err != nil {
			return nil, nil, err
		}
		out[f] = src
	}
	if b.Source != "" {
		name := filepath.Base(b.Source)
		if name == goProtocol {
			return nil, nil, fmt.Errorf("%s: the adapter %s has the name of lockcheck's protocol helper, which the build adds: rename it", b.Label, b.Source)
		}
		src, err := os.ReadFile(b.Source)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: its Go adapter: %w", b.Label, err)
		}
		out[name] = buildable(src)
		names = append(names, name)
	}
	return names, out, nil
}

// ignoreLine is the build constraint that keeps a user's adapter out of the module it lives in (the
// user's own: that module neither builds it, nor, since go mod tidy skips such files, requires its
// library). The throwaway module builds it without the line.
var ignoreLine = regexp.MustCompile(`(?m)^//go:build ignore[ \t]*\n(// \+build ignore[ \t]*\n)?`)

func buildable(src []byte) []byte { return ignoreLine.ReplaceAll(src, nil) }

// GoAdapters lists the Go adapters.
func GoAdapters() []string {
	out := make([]string, 0, len(goAdapters))
	for n := range goAdapters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// GoFiles lists a Go adapter's source files (as named in the repository's adapters/_go/).
func GoFiles(adapter string) []string {
	files, ok := goAdapters[adapter]
	if !ok {
		return nil
	}
	return append([]string{goProtocol}, files...)
}

// BuildLog gets one line when a versioned adapter is built (it takes a while the first time).
var BuildLog io.Writer = os.Stderr

// GoBinary returns the path of b's program, building it first if this machine has not yet. Builds
// started at once (every client of a run, several runs) build once: the others wait for it.
// Errors are one line that names the module and the version.
func GoBinary(b GoBuild) (string, error) {
	names, files, err := b.sources()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s %s\n", b.Module, b.Version, goVersionLine)
	for _, pin := range goPins[b.Adapter] {
		fmt.Fprintf(h, "pin %s\n", pin)
	}
	for _, f := range names {
		fmt.Fprintf(h, "%s %d\n", f, len(files[f]))
		h.Write(files[f])
	}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	root = filepath.Join(root, "lockcheck", "go-adapters")
	adapter := b.Adapter
	if b.Source != "" { // a user's: named by its file, kept apart from the shipped ones
		adapter = "user-" + strings.TrimSuffix(filepath.Base(b.Source), ".go")
	}
	name := adapter + "@" + strings.ReplaceAll(b.Version, "/", "_")
	dir := filepath.Join(root, name+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	bin := filepath.Join(dir, "adapter")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf(
			"%s is built from %s %s with the go tool, which is not on PATH: install Go %s or later",
			b.Label,
			b.Module,
			b.Version,
			goVersionLine,
		)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	// One build at a time: the others wait, then find it.
	if lock, err := os.OpenFile(filepath.Join(root, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644); err == nil {
		defer lock.Close()
		_ = unix.Flock(int(lock.Fd()), unix.LOCK_EX) // released when the file is closed
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	tmp, err := os.MkdirTemp(root, name+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // gone after the rename; left only if something failed
	started := time.Now()
	fmt.Fprintf(BuildLog, "lockcheck: building %s from %s %s (first use; kept in %s)\n", b.Label, b.Module, b.Version, dir)
	if err := buildGo(goTool, tmp, b, files); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(bin); serr == nil {
			return bin, nil // another process was first
		}
		return "", err
	}
	fmt.Fprintf(BuildLog, "lockcheck: built %s in %s\n", b.Label, time.Since(started).Round(100*time.Millisecond))
	return bin, nil
}

// buildGo writes the throwaway module into dir and builds dir/adapter.
func buildGo(goTool, dir string, b GoBuild, files map[string][]byte) error {
	mod := fmt.Sprintf("// A throwaway module lockcheck wrote to build %s.\nmodule lockcheck.adapter\n\ngo %s\n\nrequire %s %s\n",
		b.Label, goVersionLine, b.Module, b.Version)

	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return err
	}
	for f, src := range files {
		if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
			return err
		}
	}
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		// The module's own go.mod decides, whatever the user's environment says: no workspace,
		// no vendoring, no toolchain download, and a static binary (no C compiler needed).
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.Bytes(), err
	}
	// First the library alone, for a plain answer when the proxy does not serve that version.
	out, err := run("mod", "download", "-json", b.Module+"@"+b.Version)
	var info struct{ Error, Dir string }
	if err != nil {
		if json.Unmarshal(out, &info) == nil && info.Error != "" {
			return fmt.Errorf("%s: cannot download %s %s: %s", b.Label, b.Module, b.Version, firstLines(info.Error))
		}
		return fmt.Errorf("%s: go mod download %s@%s: %s", b.Label, b.Module, b.Version, firstLines(string(out)))
	}
	_ = json.Unmarshal(out, &info)
	if pins := goPins[b.Adapter]; len(pins) > 0 {
		if out, err := run(append([]string{"get", b.Module + "@" + b.Version}, pins...)...); err != nil {
			return fmt.Errorf("%s: go get %s@%s with %s: %s", b.Label, b.Module, b.Version, strings.Join(pins, " "), firstLines(string(out)))
		}
	}
	if out, err := run("mod", "tidy"); err != nil {
		if why := missingPackage(files, b.Module, b.Version, info.Dir); why != "" {
			return fmt.Errorf("%s: %s", b.Label, why)
		}
		return fmt.Errorf("%s: go mod tidy (what %s %s requires): %s", b.Label, b.Module, b.Version, firstLines(string(out)))
	}
	// The library at the version asked for, not another: tidy drops a module nothing imports, and
	// raises one another requirement needs newer.
	if out, err := run("list", "-m", "-f", "{{.Version}}", b.Module); err != nil || strings.TrimSpace(string(out)) != b.Version {
		got := strings.TrimSpace(string(out))
		if err != nil || got == "" {
			return fmt.Errorf("%s: its adapter does not import %s (go mod tidy dropped it): the adapter must use the library under test", b.Label, b.Module)
		}
		return fmt.Errorf("%s: the adapter's other imports need %s %s, not %s: build it against %s or later, or drop those imports",
			b.Label, b.Module, got, b.Version, got)
	}
	if out, err := run("build", "-trimpath", "-o", "adapter", "."); err != nil {
		return fmt.Errorf("%s: go build of its adapter against %s %s: %s", b.Label, b.Module, b.Version, firstLines(string(out)))
	}
	return nil
}

// firstLines is the first few lines of go's output on one line: enough to see what failed.
func firstLines(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "go: downloading ") || strings.HasPrefix(l, "go: finding ") {
			continue
		}
		lines = append(lines, l)
		if len(lines) == 3 {
			break
		}
	}
	if len(lines) == 0 {
		return "no output"
	}
	return strings.Join(lines, " | ")
}

// missingPackage says which import of the adapter's sources names a package of module that the
// module at version (unpacked in dir) does not have, and which packages it has, or "". go's own
// words for it look for another module that might provide the path (a module whose root holds
// no Go package, imported as the template writes it, is the usual case).
func missingPackage(files map[string][]byte, module, version, dir string) string {
	if dir == "" {
		return ""
	}
	fset := token.NewFileSet()
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rel, ok := strings.CutPrefix(path, module)
			if !ok || rel != "" && !strings.HasPrefix(rel, "/") || hasGoPackage(filepath.Join(dir, rel)) {
				continue
			}
			have := packagesIn(dir, module)
			return fmt.Sprintf("the adapter imports %s, but %s %s has no Go package there; import the one whose calls it uses: %s",
				path, module, version, strings.Join(have, ", "))
		}
	}
	return ""
}

// hasGoPackage reports whether dir holds a Go file other than a test.
func hasGoPackage(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}

// packagesIn lists the import paths of module's packages (unpacked in dir), at most ten, leaving
// out examples, test data and internal packages.
func packagesIn(dir, module string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		switch d.Name() {
		case "testdata", "internal", "examples", "example", "vendor":
			return filepath.SkipDir
		}
		if strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
			return filepath.SkipDir
		}
		if hasGoPackage(p) && len(out) < 10 {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, strings.TrimSuffix(module+"/"+filepath.ToSlash(rel), "/."))
		}
		return nil
	})
	if len(out) == 0 {
		return []string{"none found"}
	}
	return out
}
