package etcd

// Server versions. By default members run the etcd on PATH: Debian's etcd-server (3.4.23 on
// bookworm). A scenario may name another version (`server: {version: 3.4.3}`): one of the few
// below, each built once from the Go module proxy into the user's cache (package modbuild) before
// any member starts, and run by a provider whose servers are processes of this machine. Every
// member is asked its version once the cluster is up, so a run says which etcd it ran, and a
// binary that is not what its name says is refused.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/internal/modbuild"
	"github.com/lockcheck/lockcheck/providers"
)

// serverVersion is an etcd version a scenario may name.
type serverVersion struct {
	Version string // as etcd reports it: "3.4.3"
	// Module, ModVersion and Package say where it is built from; Module is empty for Debian's
	// package, which is not built but found on PATH.
	Module, ModVersion, Package string
}

// debianVersion is the version of Debian bookworm's etcd-server, what members run by default.
const debianVersion = "3.4.23"

// serverVersions are the versions lockcheck can run. The 3.4 line was never tagged as a Go
// module: the proxy refuses its v3.4.x+incompatible versions, and a 3.4 release is built from
// the pseudo-version of its tagged commit (3.4.3 is commit 3cf2f69b5738 of 2019-10-23). From 3.5
// on, the server is its own module, go.etcd.io/etcd/server/v3, whose main package is the server.
// The proxy serves only some versions (it refuses the commits of 3.4.23, 3.4.27 and 3.4.45, and
// 3.5.25, 3.5.26 and 3.5.30, for instance); each one listed was built and started as a 3-member
// cluster when it was added (TestEveryVersionStartsAndSaysWhatItIs).
var serverVersions = []serverVersion{
	{Version: debianVersion},
	{Version: "3.4.3", Module: "go.etcd.io/etcd", ModVersion: "v0.0.0-20191023171146-3cf2f69b5738", Package: "go.etcd.io/etcd"},
	{Version: "3.5.0", Module: "go.etcd.io/etcd/server/v3", ModVersion: "v3.5.0", Package: "go.etcd.io/etcd/server/v3"},
	{Version: "3.5.21", Module: "go.etcd.io/etcd/server/v3", ModVersion: "v3.5.21", Package: "go.etcd.io/etcd/server/v3"},
	{Version: "3.5.35", Module: "go.etcd.io/etcd/server/v3", ModVersion: "v3.5.35", Package: "go.etcd.io/etcd/server/v3"},
}

// ServerVersions lists the versions a scenario's server.version may name.
func ServerVersions() []string {
	out := make([]string, len(serverVersions))
	for i, v := range serverVersions {
		out[i] = v.Version
	}
	return out
}

func lookupVersion(version string) (serverVersion, bool) {
	for _, v := range serverVersions {
		if v.Version == version {
			return v, true
		}
	}
	return serverVersion{}, false
}

// built reports whether the version is built from the module proxy (not Debian's package).
func (v serverVersion) built() bool { return v.Module != "" }

// describe says which etcd the version is, for errors and the run's record.
func (v serverVersion) describe() string {
	if !v.built() {
		return "etcd " + v.Version + " (Debian's etcd-server, the etcd on PATH)"
	}
	return "etcd " + v.Version + " (built from " + v.Module + "@" + v.ModVersion + ")"
}

// supported lists the versions with where each comes from, for an error.
func supported() string {
	var out []string
	for _, v := range serverVersions {
		if v.built() {
			out = append(out, v.Version+" ("+v.Module+"@"+v.ModVersion+")")
		} else {
			out = append(out, v.Version+" (Debian's etcd-server, the default)")
		}
	}
	return strings.Join(out, ", ")
}

// checkVersion reports a server.version lockcheck cannot run.
func checkVersion(version string, bad func(field, format string, a ...any)) {
	if version == "" {
		return
	}
	if _, ok := lookupVersion(version); ok {
		return
	}
	module := "go.etcd.io/etcd/server/v3@v" + version
	if strings.HasPrefix(version, "3.4.") || strings.HasPrefix(version, "3.3.") {
		module = "go.etcd.io/etcd at the pseudo-version of its tag"
	}
	bad("server.version", "etcd %s is not a version lockcheck builds (%s); supported: %s", version, module, supported())
}

// program is how the version is built.
func (v serverVersion) program() modbuild.Program {
	return modbuild.Program{Name: "etcd", Module: v.Module, Version: v.ModVersion, Package: v.Package,
		Folder: "etcd-" + v.Version, Check: v.checkBinary}
}

// memberFlags are the flags command passes to every member (a test holds the two together): a
// version whose --help lacks one is refused before any member starts.
var memberFlags = []string{"--name", "--data-dir", "--listen-client-urls", "--advertise-client-urls", "--listen-peer-urls",
	"--initial-advertise-peer-urls", "--initial-cluster", "--initial-cluster-state", "--initial-cluster-token",
	"--heartbeat-interval", "--election-timeout", "--logger", "--log-outputs"}

// checkBinary checks a freshly built etcd: its --version names the version, its --help every flag
// the members are started with.
func (v serverVersion) checkBinary(ctx context.Context, bin string) error {
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %v: %s", bin, err, strings.TrimSpace(string(out)))
	}
	if !strings.Contains(string(out), "etcd Version: "+v.Version+"\n") {
		return fmt.Errorf("%s --version says %q, not etcd Version: %s", bin, strings.TrimSpace(string(out)), v.Version)
	}
	help, _ := exec.CommandContext(ctx, bin, "--help").CombinedOutput() // 3.4 exits 0, 3.5 too; the text decides
	var missing []string
	for _, f := range memberFlags {
		if !strings.Contains(string(help), f+" ") && !strings.Contains(string(help), f+"\n") && !strings.Contains(string(help), f+"=") {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("etcd %s has no %s (lockcheck starts members with them)", v.Version, strings.Join(missing, ", "))
	}
	return nil
}

// runsHere reports whether p can run a version built here: its servers are processes of this
// machine (providers.OnThisMachine).
func runsHere(p providers.Provider) bool {
	h, ok := p.(providers.OnThisMachine)
	return ok && h.RunsOnThisMachine()
}

// serverBinary returns the program members run for version ("" is the default): "etcd" on PATH,
// or the version's binary in the cache, built first if it is not there. It refuses a built version
// on a provider that does not run servers on this machine, before anything is built or started.
func serverBinary(ctx context.Context, version string, p providers.Provider) (string, serverVersion, error) {
	if version == "" {
		version = debianVersion
	}
	v, ok := lookupVersion(version)
	if !ok { // the scenario loader refuses it first; this is for callers that build their own settings
		return "", v, fmt.Errorf("server.version: etcd %s is not a version lockcheck builds; supported: %s", version, supported())
	}
	if !v.built() {
		return "etcd", v, nil
	}
	if !runsHere(p) {
		return "", v, fmt.Errorf("server.version %s: the %s provider cannot run an etcd built on this machine (docker runs its image's, "+
			"Debian's etcd %s; external, your cluster's); version %s needs the local provider", v.Version, p.Name(), debianVersion, v.Version)
	}
	bin, err := modbuild.Ensure(ctx, v.program(), func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "lockcheck: "+format+"\n", a...)
	})
	if err != nil {
		return "", v, fmt.Errorf("server.version %s: %w", v.Version, err)
	}
	// Again at each start (a few milliseconds): a binary built before the members took a new flag
	// is refused here, not by a member that fails to start.
	if err := v.checkBinary(ctx, bin); err != nil {
		return "", v, fmt.Errorf("server.version %s: %w (remove %s to build it again)", v.Version, err, filepath.Dir(bin))
	}
	return bin, v, nil
}

// reportedVersion asks the member at addr which version it runs (etcd's /version).
func reportedVersion(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		Server string `json:"etcdserver"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&v); err != nil {
		return "", fmt.Errorf("etcd %s/version: %w", addr, err)
	}
	if v.Server == "" {
		return "", errors.New("etcd " + addr + "/version: no etcdserver field")
	}
	return v.Server, nil
}

// checkVersions asks every member its version: each must run the one asked for (a named version)
// or the same as the others (the default: whatever the etcd on PATH, or the provider's image, is).
// It returns what the cluster runs, for the run's record.
func (c *Cluster) checkVersions(ctx context.Context) (string, error) {
	seen := ""
	for _, name := range c.names {
		got, err := reportedVersion(ctx, c.members[name].Addr(ClientPort))
		if err != nil {
			return "", err
		}
		if c.version.built() && got != c.version.Version {
			return "", fmt.Errorf("etcd %s runs %s, not %s", name, got, c.version.describe())
		}
		if seen != "" && got != seen {
			return "", fmt.Errorf("etcd members run different versions: %s and %s", seen, got)
		}
		seen = got
	}
	if c.version.built() {
		return c.version.describe(), nil
	}
	if c.askedDebian && seen != debianVersion {
		return "", fmt.Errorf("server.version %s names Debian's etcd-server, but the members run etcd %s", debianVersion, seen)
	}
	return "etcd " + seen, nil
}

// BuildServer returns the binary of a version lockcheck builds, building it first if it is not in
// the cache: what a run's start does, for a person or a make target that wants it done ahead.
func BuildServer(ctx context.Context, version string) (string, error) {
	v, ok := lookupVersion(version)
	if !ok || !v.built() {
		return "", fmt.Errorf("etcd %s is not a version lockcheck builds; supported: %s", version, supported())
	}
	return modbuild.Ensure(ctx, v.program(), func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "lockcheck: "+format+"\n", a...)
	})
}

// ServerBuilt reports whether a version lockcheck builds is in the cache already.
func ServerBuilt(version string) bool {
	v, ok := lookupVersion(version)
	return ok && v.built() && modbuild.Built(v.program())
}
