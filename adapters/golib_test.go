package adapters

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// go-zookeeper needs nothing else: the quickest library to build an adapter against.
var zk102 = GoBuild{Adapter: "zk", Module: "github.com/go-zookeeper/zk", Version: "v1.0.2", Label: "zk@v1.0.2"}

// freshCache points the user's cache folder at an empty one for the test, keeping the go tool's
// own build cache where it was (it lives in the same folder by default: rebuilding the standard
// library would take a minute).
func freshCache(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	t.Setenv("GOCACHE", strings.TrimSpace(string(out)))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
}

// A versioned adapter is built once, even when every client of a run asks at once, and the
// program it leaves speaks the protocol.
func TestGoBinaryBuildsOnce(t *testing.T) {
	freshCache(t)
	var wg sync.WaitGroup
	bins := make([]string, 4)
	errs := make([]error, 4)
	for i := range bins {
		wg.Add(1)
		go func() { defer wg.Done(); bins[i], errs[i] = GoBinary(zk102) }()
	}
	wg.Wait()
	for i := range bins {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if bins[i] != bins[0] {
			t.Fatalf("two programs for one version: %s, %s", bins[0], bins[i])
		}
	}
	entries, _ := os.ReadDir(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "lockcheck", "go-adapters"))
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) != 1 || !strings.HasPrefix(dirs[0], "zk@v1.0.2-") {
		t.Fatalf("want one folder (no leftovers), got %v", dirs)
	}
	mod, err := os.ReadFile(filepath.Join(filepath.Dir(bins[0]), "go.mod"))
	if err != nil || !strings.Contains(string(mod), "require github.com/go-zookeeper/zk v1.0.2") {
		t.Fatalf("go.mod of the build does not pin the version: %s %v", mod, err)
	}
	// init, then close, with nothing to connect to: the program answers both and exits.
	cmd := exec.Command(bins[0])
	cmd.Stdin = strings.NewReader(`{"id":1,"type":"init","client":"c","nodes":["127.0.0.1:1"],"lock":"k","ttl_ms":1000,"timeout_ms":100}` + "\n" +
		`{"id":2,"type":"close"}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"in_reply_to":1,"type":"ok"}` + "\n" + `{"in_reply_to":2,"type":"ok"}` + "\n"; string(out) != want {
		t.Fatalf("answers %q, want %q", out, want)
	}
}

// A version the module proxy does not serve is one line naming the module and the version.
func TestGoBinaryRefusedVersion(t *testing.T) {
	freshCache(t)
	b := zk102
	b.Version, b.Label = "v1.0.0", "zk@v1.0.0" // the proxy answers 403 for it
	_, err := GoBinary(b)
	if err == nil {
		t.Fatal("built a version the proxy does not serve")
	}
	msg := err.Error()
	for _, want := range []string{"zk@v1.0.0: cannot download github.com/go-zookeeper/zk v1.0.0: ", "v1.0.0"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
}

func TestGoBinaryWithoutGo(t *testing.T) {
	freshCache(t)
	t.Setenv("PATH", t.TempDir())
	_, err := GoBinary(zk102)
	if err == nil || !strings.Contains(err.Error(), "zk@v1.0.2 is built from github.com/go-zookeeper/zk v1.0.2 with the go tool, which is not on PATH") {
		t.Fatalf("want a missing go tool named, got %v", err)
	}
}

// Every Go adapter's files are embedded, and none is compiled into lockcheck (package main in a
// folder the go tool skips).
func TestGoAdaptersAreEmbedded(t *testing.T) {
	for _, a := range GoAdapters() {
		for _, f := range GoFiles(a) {
			src, err := goSources.ReadFile(goDir + "/" + f)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			// A build constraint may come first (renewals_etcd.go stays out of the quick start).
			if !regexp.MustCompile(`(?m)\A(//go:build [^\n]*\n\n)?package main\n`).Match(src) {
				t.Errorf("%s: %s is not package main", a, f)
			}
		}
	}
}

func TestFirstLinesSkipsDownloads(t *testing.T) {
	out := "go: downloading x v1\n\ngo: a.go:3: undefined: y\nb\nc\nd\n"
	if got, want := firstLines(out), "go: a.go:3: undefined: y | b | c"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// The Go adapters read renewals off the wire with copies of lockcheck's own readers (they are
// built with the standard library and the library's modules only): the copies must stay the same.
func TestAdaptersRenewalReadersAreLocksOwn(t *testing.T) {
	for _, f := range []string{"renewals_zk.go", "renewals_etcd.go"} {
		mine, err := goSources.ReadFile(goDir + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := os.ReadFile(filepath.Join("..", "locks", f))
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Replace(string(theirs), "package locks\n", "package main\n", 1); string(mine) != want {
			t.Errorf("adapters/_go/%s differs from locks/%s beyond its package clause: copy it again", f, f)
		}
	}
}

// userZK is a user's adapter as a design file's go: section names it: package main against
// go-zookeeper and the protocol helper, kept out of the user's own module by //go:build ignore.
const userZK = `//go:build ignore

package main

import (
	"time"

	"github.com/go-zookeeper/zk"
)

func main() { serve(func(initRequest) (lockClient, error) { return never{}, nil }) }

type never struct{}

func (never) acquire(time.Duration) answer { return fail("never: " + zk.StateUnknown.String()) }
func (never) release(time.Duration) answer { return fail("not held") }
func (never) close()                       {}
`

// A user's adapter is built against each version named, with the protocol helper added: two
// versions, two programs, each module pinning its version, each speaking the protocol.
func TestUserAdapterIsBuiltAtEachVersion(t *testing.T) {
	freshCache(t)
	src := filepath.Join(t.TempDir(), "my_zk.go")
	if err := os.WriteFile(src, []byte(userZK), 0o644); err != nil {
		t.Fatal(err)
	}
	var bins []string
	for _, v := range []string{"v1.0.2", "v1.0.3"} {
		bin, err := GoBinary(GoBuild{Source: src, Module: "github.com/go-zookeeper/zk", Version: v, Label: "my_zk@" + v})
		if err != nil {
			t.Fatal(err)
		}
		mod, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "go.mod"))
		if err != nil || !strings.Contains(string(mod), "github.com/go-zookeeper/zk "+v) {
			t.Fatalf("go.mod of the %s build does not pin it: %s %v", v, mod, err)
		}
		if !strings.HasPrefix(filepath.Base(filepath.Dir(bin)), "user-my_zk@"+v+"-") {
			t.Errorf("built into %s: want a folder of the user's adapter at %s", bin, v)
		}
		cmd := exec.Command(bin)
		cmd.Stdin = strings.NewReader(`{"id":1,"type":"init","client":"c","nodes":[],"lock":"k","ttl_ms":1000,"timeout_ms":100}` + "\n" +
			`{"id":2,"type":"acquire"}` + "\n" + `{"id":3,"type":"close"}` + "\n")
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), `{"in_reply_to":2,"type":"fail","error":"never: StateUnknown"}`) {
			t.Fatalf("the %s program answered %q, %v", v, out, err)
		}
		bins = append(bins, bin)
	}
	if bins[0] == bins[1] {
		t.Fatal("one program for two versions")
	}
}

// An adapter that does not use the library under test, or that takes the protocol helper's name,
// is refused, naming what to change.
func TestUserAdapterMustUseTheLibrary(t *testing.T) {
	freshCache(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "my_lock.go")
	noImport := strings.Replace(strings.Replace(userZK, `"github.com/go-zookeeper/zk"`, "", 1), `"never: " + zk.StateUnknown.String()`, `"never"`, 1)
	if err := os.WriteFile(src, []byte(noImport), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := GoBinary(GoBuild{Source: src, Module: "github.com/go-zookeeper/zk", Version: "v1.0.2", Label: "my_lock@v1.0.2"})
	if err == nil || !strings.Contains(err.Error(), "my_lock@v1.0.2: its adapter does not import github.com/go-zookeeper/zk") {
		t.Fatalf("an adapter without the library: %v", err)
	}
	helper := filepath.Join(dir, "lockproto.go")
	if err := os.WriteFile(helper, []byte(userZK), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = GoBinary(GoBuild{Source: helper, Module: "github.com/go-zookeeper/zk", Version: "v1.0.2", Label: "x@v1.0.2"})
	if err == nil || !strings.Contains(err.Error(), "has the name of lockcheck's protocol helper") {
		t.Fatalf("an adapter called lockproto.go: %v", err)
	}
}

// An adapter that imports a path of the library's module where the module has no Go package (its
// root, as init's template writes it, for a module whose code is in a subfolder) is told which
// packages the module has, instead of go's search for another module providing the path.
func TestAnAdapterImportingAPackageTheModuleLacksIsToldWhichItHas(t *testing.T) {
	dir := t.TempDir()
	for f, text := range map[string]string{
		"README.md":          "a module whose code is in lock/",
		"lock/lock.go":       "package lock",
		"lock/lock_test.go":  "package lock",
		"internal/x/x.go":    "package x",
		"lock/testdata/t.go": "package t",
	} {
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	adapter := func(imp string) map[string][]byte {
		return map[string][]byte{"adapter.go": []byte("package main\n\nimport _ \"" + imp + "\"\n")}
	}
	const module = "example.com/dlock/v5"
	why := missingPackage(adapter(module), module, "v5.1.0", dir)
	want := "the adapter imports example.com/dlock/v5, but example.com/dlock/v5 v5.1.0 has no Go package there; " +
		"import the one whose calls it uses: example.com/dlock/v5/lock"
	if why != want {
		t.Errorf("root import:\n got %q\nwant %q", why, want)
	}
	for _, imp := range []string{module + "/lock", "example.com/dlock/v5lock", "fmt"} {
		if why := missingPackage(adapter(imp), module, "v5.1.0", dir); why != "" {
			t.Errorf("import %s: %q, want nothing", imp, why)
		}
	}
}

// userWaiter is a user's adapter whose acquire prints to stdout as a chatty library does, then
// passes a program point and waits on the kit's attempt context.
const userWaiter = `//go:build ignore

package main

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

func main() { serve(func(initRequest) (lockClient, error) { return waiter{}, nil }) }

type waiter struct{}

func (waiter) acquire(within time.Duration) answer {
	fmt.Println("library chatter on stdout", zk.StateUnknown)
	point("answered")
	select {
	case <-attemptContext().Done():
		return fail("given up")
	case <-time.After(within):
		return unknownf("not given up in time")
	}
}
func (waiter) release(time.Duration) answer { return fail("not held") }
func (waiter) close()                       {}
func (waiter) usage() []string              { return []string{"abandon"} }
`

// The kit keeps what a library prints to stdout off the protocol (it goes to stderr), says at
// init which usage steps the adapter takes, announces a point of an acquire and gives the
// attempt up when the continue says so; an abandon line does the same while the attempt waits.
func TestGoKitKeepsStdoutForTheProtocolAndGivesAttemptsUp(t *testing.T) {
	freshCache(t)
	src := filepath.Join(t.TempDir(), "my_waiter.go")
	if err := os.WriteFile(src, []byte(userWaiter), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := GoBinary(GoBuild{Source: src, Module: "github.com/go-zookeeper/zk", Version: "v1.0.3", Label: "my_waiter@v1.0.3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, giveUp := range []string{`{"type":"continue","abandon":true}`, `{"type":"continue"}` + "\n" + `{"type":"abandon"}`} {
		cmd := exec.Command(bin)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		in, _ := cmd.StdinPipe()
		outPipe, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(outPipe)
		next := func() string {
			if !lines.Scan() {
				t.Fatalf("the adapter closed stdout; stderr: %s", stderr.String())
			}
			return lines.Text()
		}
		fmt.Fprintln(in, `{"id":1,"type":"init","client":"c","nodes":[],"lock":"k","ttl_ms":1000,"timeout_ms":100}`)
		if got := next(); got != `{"in_reply_to":1,"type":"ok","usage":["abandon"]}` {
			t.Fatalf("init answered %s", got)
		}
		fmt.Fprintln(in, `{"id":2,"type":"acquire","timeout_ms":5000}`)
		if got := next(); got != `{"name":"answered","type":"point"}` {
			t.Fatalf("want the point first (the chatter kept off stdout), got %s", got)
		}
		fmt.Fprintln(in, giveUp)
		if got := next(); got != `{"in_reply_to":2,"type":"fail","error":"given up"}` {
			t.Fatalf("after %s the acquire answered %s", giveUp, got)
		}
		fmt.Fprintln(in, `{"id":3,"type":"close"}`)
		next()
		_ = in.Close()
		_ = cmd.Wait()
		if !strings.Contains(stderr.String(), "library chatter on stdout") {
			t.Errorf("what the library printed to stdout should be in stderr: %q", stderr.String())
		}
	}
}
