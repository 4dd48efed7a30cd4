package locks

// versioned.go: a Go lock library at a version a scenario names, LIB@VERSION (redsync@v4.0.3,
// etcd@v3.4.3, zk@v1.0.1). LIB is the built-in design of that library, whose properties (service,
// nodes, token, expiry, queue, blocking) the versioned design keeps; the library itself runs at
// VERSION as a small program of its own (adapters/_go/, built on first use into the user's cache
// by package adapters) through the lock-client protocol. Without a version the name is the
// built-in design, compiled into lockcheck at one version.
//
// Get resolves such names without building anything (a stored run is re-judged anywhere);
// Design.Prepare builds the program, which a run does before it starts any server, and New finds
// it built (or builds it: a worker may be the first).

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/adapters"
)

// Library is a Go lock library that can be named with a version.
type Library struct {
	Name    string        // the built-in design it follows, and the name's LIB
	Repo    string        // where the library lives
	Lines   []LibraryLine // the versions it can be run at, by API
	Example string        // a version to show in messages
	About   string        // what the versioned design does, after "LIB at VERSION"
	Modes   []string      // how it is known to fail
	// Points are the program points its adapter announces; Usage the usage steps it takes
	// beyond those every design does (its adapter says so again at init).
	Points, Usage []string
	args          []string // the adapter's arguments
}

// LibraryLine is a range of a library's versions that share one module path and one adapter.
type LibraryLine struct {
	Versions string // e.g. "v4.x"
	Module   string // the module path of those versions
	Adapter  string // the Go adapter (package adapters) written against their API
	match    func(v semver) bool
	// proxyVersion maps a version as named to the one the module proxy serves (nil: the same).
	proxyVersion func(named string) (string, error)
}

// etcd34PseudoVersions are etcd 3.4 client releases as the module proxy serves them: the module
// go.etcd.io/etcd's release tags (v3.4.3+incompatible) are refused there, its pseudo-versions not.
var etcd34PseudoVersions = map[string]string{
	"v3.4.3": "v0.0.0-20191023171146-3cf2f69b5738",
}

func etcd34ProxyVersion(named string) (string, error) {
	if strings.HasPrefix(named, "v0.0.0-") {
		return named, nil // a pseudo-version, as the proxy serves it
	}
	if pv, ok := etcd34PseudoVersions[named]; ok {
		return pv, nil
	}
	var known []string
	for v, pv := range etcd34PseudoVersions {
		known = append(known, v+" (= "+pv+")")
	}
	return "", fmt.Errorf("the module proxy serves etcd 3.4's client (module go.etcd.io/etcd) only as pseudo-versions; "+
		"lockcheck knows %s; name another by its pseudo-version, etcd@v0.0.0-<date>-<commit> (go list -m go.etcd.io/etcd@<commit> gives it)",
		strings.Join(known, ", "))
}

// etcd33ProxyVersion: the module proxy serves etcd 3.3's client (module github.com/coreos/etcd,
// which has no go.mod) as vX.Y.Z+incompatible.
func etcd33ProxyVersion(named string) (string, error) { return named + "+incompatible", nil }

var etcdLines = []LibraryLine{
	{Versions: "v3.3.x", Module: "github.com/coreos/etcd", Adapter: "etcd-v33",
		match:        func(v semver) bool { return v.major == 3 && v.minor == 3 && v.pre == "" },
		proxyVersion: etcd33ProxyVersion},
	{Versions: "v3.4.x (v3.4.3, or a pseudo-version v0.0.0-...)", Module: "go.etcd.io/etcd", Adapter: "etcd-v34",
		match:        func(v semver) bool { return v.major == 3 && v.minor == 4 || v.pseudo() },
		proxyVersion: etcd34ProxyVersion},
	{Versions: "v3.5.0 and later", Module: "go.etcd.io/etcd/client/v3", Adapter: "etcd-v35",
		match: func(v semver) bool { return v.major == 3 && v.minor >= 5 }},
}

// The etcd adapter's point and usage: every answer of a request during an acquire passes
// "answered" (adapters/_go/points_grpc.go), and Lock's context ends when the attempt is given up.
var (
	etcdAdapterPoints = []string{"answered"}
	etcdAdapterUsage  = []string{UsageAbandon}
)

// Libraries are the Go libraries that can be named with a version.
var Libraries = []Library{
	{
		Name: "redsync", Repo: "github.com/go-redsync/redsync", Example: "v4.0.3",
		Lines: []LibraryLine{
			{Versions: "v1.x", Module: "github.com/go-redsync/redsync", Adapter: "redsync-v1",
				match: func(v semver) bool { return v.major == 1 }},
			{Versions: "v4.x", Module: "github.com/go-redsync/redsync/v4", Adapter: "redsync-v4",
				match: func(v semver) bool { return v.major == 4 }},
		},
		About: "Mutex (Redlock) as its users write it: Lock with one try, Unlock; before each access to the resource the holder " +
			"extends the lock (Extend), and goes on only if Extend says it did",
		Modes: []string{
			"Extend and Unlock reported success on a lock that was no longer ours up to v1.2.0 (PR #38) and from v3.0.0 to v4.0.3 " +
				"(PR #61): a holder resuming after its lease went on beside the next holder",
			"a pause between the Extend and the write outlives the TTL (K3); no fencing token (K6)",
		},
	},
	{
		Name: "etcd", Repo: "go.etcd.io/etcd (client, package concurrency)", Lines: etcdLines, Example: "v3.4.3", args: []string{"checked"},
		Points: etcdAdapterPoints, Usage: etcdAdapterUsage,
		About: "concurrency.Session + Mutex as they are (lease kept alive by the library, oldest key holds); the holder checks " +
			"Session.Done() before each access",
		Modes: []string{
			"up to 3.4, a waiter whose lease expired while it waited is told it holds (etcd #9921, #11456; fixed in 3.5.0 by PR #11408): two holders",
			"a pause longer than the TTL, or between the check and the write (K2, K3); create-revision fencing rescues",
		},
	},
	{
		Name: "etcd-unchecked", Repo: "go.etcd.io/etcd (client, package concurrency)", Lines: etcdLines, Example: "v3.4.3",
		Points: etcdAdapterPoints, Usage: etcdAdapterUsage,
		About: "concurrency.Session + Mutex as most code uses them: Lock, work, Unlock, never looking at the session",
		Modes: []string{
			"up to 3.4, a waiter whose lease expired while it waited is told it holds (etcd #9921, #11456; fixed in 3.5.0 by PR #11408): two holders",
			"a pause or partition longer than the TTL anywhere in the critical section (K2, K3); create-revision fencing rescues",
		},
	},
	{
		Name: "zk", Repo: "github.com/go-zookeeper/zk", Example: "v1.0.1",
		Lines: []LibraryLine{{Versions: "v1.x", Module: "github.com/go-zookeeper/zk", Adapter: "zk",
			match: func(v semver) bool { return v.major == 1 }}},
		About: "zk.NewLock as it is: protected ephemeral sequential node, lowest holds, watch the predecessor; " +
			"the holder is never told of session expiry",
		Modes: []string{
			"up to v1.0.1, Lock fails whenever a kazoo client's node (<uuid>__lock__N) is queued on the same path: Go clients " +
				"cannot share a lock with Python ones (fixed in v1.0.2, commit d69fe43)",
			"the holder is never told its session expired (K2, A1); czxid fencing rescues",
		},
	},
}

// LibraryNames lists the LIB names that take a version.
func LibraryNames() []string {
	var out []string
	for _, l := range Libraries {
		out = append(out, l.Name)
	}
	return out
}

// semver is a version as named: vMAJOR.MINOR.PATCH[-PRERELEASE].
type semver struct {
	major, minor, patch int
	pre                 string
}

// pseudo reports a Go pseudo-version of an untagged commit (v0.0.0-<date>-<commit>).
func (v semver) pseudo() bool { return v.major == 0 && v.minor == 0 && v.patch == 0 && v.pre != "" }

var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?$`)

func parseVersion(s string) (semver, bool) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return semver{}, false
	}
	var v semver
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	v.patch, _ = strconv.Atoi(m[3])
	v.pre = strings.TrimPrefix(m[4], "-")
	return v, true
}

// versioned resolves LIB@VERSION.
func versioned(name string) (Design, error) {
	if d, ok := registered(name); ok {
		return d, nil // a release a program registered (lockchecktest.Design.Version)
	}
	lib, version, _ := strings.Cut(name, "@")
	var l *Library
	for i := range Libraries {
		if Libraries[i].Name == lib {
			l = &Libraries[i]
		}
	}
	if l == nil {
		return Design{}, fmt.Errorf("lock %q: %q is not a library that can be named with a version; those are: %s (lockcheck list shows their modules)",
			name, lib, strings.Join(LibraryNames(), ", "))
	}
	v, ok := parseVersion(version)
	if !ok {
		return Design{}, fmt.Errorf("lock %q: %q is not a version: write %s@vMAJOR.MINOR.PATCH, e.g. %s@%s",
			name, version, lib, lib, l.Example)
	}
	version = "v" + strings.TrimPrefix(version, "v")
	var line *LibraryLine
	for i := range l.Lines {
		if l.Lines[i].match(v) {
			line = &l.Lines[i]
		}
	}
	if line == nil {
		var have []string
		for _, ln := range l.Lines {
			have = append(have, ln.Versions+" ("+ln.Module+")")
		}
		return Design{}, fmt.Errorf("lock %q: no adapter for %s %s; versions that can be named: %s", name, l.Repo, version, strings.Join(have, ", "))
	}
	proxyVersion := version
	if line.proxyVersion != nil {
		pv, err := line.proxyVersion(version)
		if err != nil {
			return Design{}, fmt.Errorf("lock %q: %w", name, err)
		}
		proxyVersion = pv
	}
	base, err := Get(l.Name)
	if err != nil {
		return Design{}, err
	}
	name = l.Name + "@" + version
	build := adapters.GoBuild{Adapter: line.Adapter, Module: line.Module, Version: proxyVersion, Label: name}
	at := line.Module + " " + proxyVersion
	if proxyVersion != version {
		at = fmt.Sprintf("%s %s (= %s)", line.Module, proxyVersion, version)
	}
	d := base
	d.Name = name
	d.Summary = fmt.Sprintf("%s at %s: %s", l.Name, version, l.About)
	d.Source = fmt.Sprintf("%s, built on first use against adapters/_go/%s, run through the lock-client protocol",
		at, strings.Join(adapters.GoFiles(line.Adapter), " + "))
	d.FailureModes = l.Modes
	d.Scenarios, d.Points, d.Usage, d.Program = nil, l.Points, l.Usage, nil
	d.External = true
	d.Prepare = func() error { _, err := adapters.GoBinary(build); return err }
	args := l.args
	d.New = func(env Env) (Lock, error) {
		bin, err := adapters.GoBinary(build)
		if err != nil {
			return nil, err
		}
		return StartProgram(name, append([]string{bin}, args...), "", nil, env)
	}
	return d, nil
}
