package starter

// Library adapters: a Go adapter of a library lockcheck does not ship, one template per lock
// service (templates/golib-SERVICE/adapter.go.tmpl), each a correct lock on that service that
// only imports the library, for the user to replace with the library's calls.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/services"
)

// LibraryKit is what a library adapter's template on one service gives its design file.
type LibraryKit struct {
	Service string
	Nodes   int    // how many servers its design asks for
	Token   string // the fencing token its adapter hands out, as a design file names it
	Lock    string // what the template's lock is, in a few words
	// Unleased: the lock has no lease of its own; it lives as long as its connection (a design
	// file's expires: false and connection: true).
	Unleased bool
}

// Faults are the matrix columns init suggests first: for a lock on a lease, a holder frozen past
// it; for a lock held as long as its connection, which no pause ends, the holder's death too.
func (k LibraryKit) Faults() string {
	if k.Unleased {
		return "none,pause-after-acquire,kill-holder"
	}
	return "none,pause-after-acquire,pause-before-write"
}

// LibraryKits are the templates by service, in the order errors list them.
var LibraryKits = []LibraryKit{
	{Service: locks.Redis, Nodes: 1, Token: "INCR", Lock: "SET NX PX, an INCR fencing token, compare-and-delete (go-redis)"},
	{Service: locks.ZooKeeper, Nodes: 1, Token: "czxid of the lock node", Lock: "an ephemeral node, its czxid the fencing token (go-zookeeper/zk)"},
	{Service: "etcd", Nodes: 1, Token: "create revision of the key", Lock: "a key put if absent on a lease, its create revision the fencing token (etcd's client)"},
	{Service: "mariadb", Nodes: 1, Token: "none", Lock: "GET_LOCK on a connection of its own (go-sql-driver/mysql)", Unleased: true},
	{Service: "postgres", Nodes: 1, Token: "none", Lock: "a session advisory lock on a connection of its own (pgx)", Unleased: true},
}

// LibraryKitFor is the template for service ("" for Redis's), or an error listing the services.
func LibraryKitFor(service string) (LibraryKit, error) {
	if service == "" {
		service = locks.Redis
	}
	i := slices.IndexFunc(LibraryKits, func(k LibraryKit) bool { return k.Service == service })
	if i < 0 {
		var have []string
		for _, k := range LibraryKits {
			have = append(have, k.Service)
		}
		if !slices.Contains(services.Names(), service) {
			return LibraryKit{}, fmt.Errorf("--service %q: not a lock service lockcheck runs; valid services: %s", service, strings.Join(have, ", "))
		}
		return LibraryKit{}, fmt.Errorf("--service %q: no library template for it; templates: %s", service, strings.Join(have, ", "))
	}
	return LibraryKits[i], nil
}

// DesignLines are the design file's lines for the template's lock beyond service, nodes and token.
func (k LibraryKit) DesignLines() string {
	if k.Unleased {
		return "expires: false        # no lease: held until released or its connection ends\n" +
			"connection: true      # a hold lasts only while its connection does\n"
	}
	lease := "lease"
	if k.Service == locks.ZooKeeper {
		lease = "session"
	}
	return fmt.Sprintf("expires: true         # a %s ends a hold its client does not renew (the run's TTL)\n"+
		"connection: false     # a hold outlives a broken connection while its %s lasts\n", lease, lease)
}

// Adapter is the template's adapter for the library module, whose design is named name; it
// imports pkg, the module's package to call (ChooseLibraryPackage).
func (k LibraryKit) Adapter(name, module, pkg string) ([]byte, error) {
	text, err := templates.ReadFile(path.Join("templates", "golib-"+k.Service, "adapter.go.tmpl"))
	if err != nil {
		return nil, err
	}
	return []byte(strings.NewReplacer("{{NAME}}", name, "{{MODULE}}", module, "{{IMPORT}}", pkg).Replace(string(text))), nil
}

// Which package of a library's module its adapter imports: a module need not have a Go package
// at its root (github.com/gomodule/redigo keeps its code in redis/), and an import of a path
// with no package fails the adapter's first build.

// LockWords name a package that holds a lock, best first: a module with no root package is
// imported at its shallowest package whose path has one (etcd's concurrency, a redislock/).
var LockWords = []string{"lock", "mutex", "concurrency", "sync"}

// LibraryPackage is the package of a module an adapter imports, why it was chosen, and the
// module's other importable packages (at most ten), for the user to pick another.
type LibraryPackage struct {
	Path, Why string
	Others    []string
}

// ModuleDir is where module at version is unpacked in the module cache (go mod download -json),
// downloading it first when this machine has not: as the adapter's build will (adapters.GoBinary),
// outside any module and workspace of the user's.
func ModuleDir(module, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "lockcheck-init-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	runErr := cmd.Run()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil || info.Error != "" || info.Dir == "" {
		why := info.Error
		if why == "" {
			why = strings.TrimSpace(stderr.String())
		}
		if why == "" && runErr != nil {
			why = runErr.Error()
		}
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, firstLine(why))
	}
	return info.Dir, nil
}

// ChooseLibraryPackage chooses the package of module (unpacked in dir) to import: the root package
// when the root has Go files (not tests) of a package other than main, otherwise the shallowest
// package whose path has a lock word (LockWords, the earlier word first), otherwise the shallowest
// package; a tie goes to the first path in order. Packages are those the adapter's build sees
// (CGO_ENABLED=0, this machine's GOOS and GOARCH), outside internal/, testdata/, vendor/,
// examples and nested modules.
func ChooseLibraryPackage(dir, module string) (LibraryPackage, error) {
	ctx := build.Default
	ctx.CgoEnabled = false // the adapter is built without cgo
	importable := func(d string) bool {
		p, err := ctx.ImportDir(d, 0)
		return err == nil && p.Name != "main" && len(p.GoFiles) > 0
	}
	if importable(dir) {
		return LibraryPackage{Path: module, Why: "the module's root package"}, nil
	}
	var rels []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || p == dir {
			return nil
		}
		switch n := d.Name(); {
		case n == "internal", n == "testdata", n == "vendor", n == "example", n == "examples",
			strings.HasPrefix(n, "."), strings.HasPrefix(n, "_"):
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
			return filepath.SkipDir // another module's
		}
		if importable(p) {
			rel, _ := filepath.Rel(dir, p)
			rels = append(rels, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return LibraryPackage{}, err
	}
	if len(rels) == 0 {
		return LibraryPackage{}, errors.New(module + " has no Go package an adapter can import (outside internal/, examples and main packages)")
	}
	depth := func(rel string) int { return strings.Count(rel, "/") }
	word := func(rel string) int {
		return slices.IndexFunc(LockWords, func(w string) bool { return strings.Contains(strings.ToLower(rel), w) })
	}
	slices.SortStableFunc(rels, func(a, b string) int {
		wa, wb := word(a), word(b)
		switch {
		case (wa >= 0) != (wb >= 0): // a lock word beats none
			if wa >= 0 {
				return -1
			}
			return 1
		case depth(a) != depth(b):
			return depth(a) - depth(b)
		case wa != wb:
			return wa - wb
		}
		return strings.Compare(a, b)
	})
	chosen := rels[0]
	why := "its shallowest package (the module has no package at its root, and none named for a lock)"
	if w := word(chosen); w >= 0 {
		why = fmt.Sprintf("its shallowest package named for a lock (%q; the module has no package at its root)", LockWords[w])
	}
	var others []string
	for _, rel := range rels[1:min(len(rels), 11)] {
		others = append(others, path.Join(module, rel))
	}
	return LibraryPackage{Path: path.Join(module, chosen), Why: why, Others: others}, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
