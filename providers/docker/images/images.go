// Package images builds the container images the docker provider runs, on a machine that cannot
// pull any: a base image made from Debian's own packages (debootstrap into a folder, then
// imported); on it one shared layer, the servers image, with every server type's packages
// (Packages) installed in one apt step; and on that one image per server type from the
// Dockerfiles beside this file, which only add their own few lines. One apt step for all the
// servers, not one per type, is most of the time saved: each step updates the package lists and
// installs what the others share. Every image has iptables (peer partitions inside a node's
// network namespace) and libfaketime (settable server clocks) from the base.
//
// Images are tagged by a hash of what they are made from (the base's recipe, the servers layer's
// packages, the Dockerfile), so an existing image is reused and a changed recipe gives a new
// tag: Ensure builds only what is missing. It lives beside the provider (not in a top-level package) because nothing else runs
// containers; `lockcheck images` and the provider both call it.
package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

//go:embed */Dockerfile
var dockerfiles embed.FS

// Repository is the prefix of every image name: lockcheck/base, lockcheck/redis, ...
const Repository = "lockcheck/"

// LabelImage marks every image lockcheck built with the server type it is for.
const LabelImage = "lockcheck.image"

// The base image: a minimal Debian bookworm with what every node needs besides its server.
const (
	suite = "bookworm"
	// baseName is the base image's name after Repository.
	baseName = "base"
	// serversName is the shared servers layer's name after Repository.
	serversName = "servers"
)

// Packages are the Debian packages each server type's image runs, all installed in the shared
// servers layer. A server type has a Dockerfile and an entry here (a test checks both ways).
var Packages = map[string][]string{
	"etcd":      {"etcd-server", "etcd-client"}, // etcdctl, for looking into a node by hand
	"mariadb":   {"mariadb-server"},
	"postgres":  {"postgresql"},
	"redis":     {"redis-server"},
	"zookeeper": {"default-jre-headless", "zookeeper", "libslf4j-java"},
}

// serversDockerfile is the shared servers layer's recipe, FROM the base. The JRE's package wants
// the man folder the minimal base lacks.
func serversDockerfile() string {
	var pkgs []string
	for _, name := range Names() {
		pkgs = append(pkgs, Packages[name]...)
	}
	return "ARG BASE\nFROM ${BASE}\nRUN mkdir -p /usr/share/man/man1 \\\n && apt-get update -qq \\\n" +
		" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends " + strings.Join(pkgs, " ") + " >/dev/null \\\n" +
		" && rm -rf /var/lib/apt/lists/*\n"
}

// baseInclude are the packages the base image adds to debootstrap's minimal set: iptables for
// peer partitions, libfaketime for clocks, procps and iproute2 to look inside a node by hand.
var baseInclude = []string{"iptables", "libfaketime", "procps", "iproute2", "ca-certificates"}

// Names lists the server types there is a Dockerfile for (NodeSpec.Image), sorted.
func Names() []string {
	entries, err := dockerfiles.ReadDir(".")
	if err != nil {
		panic(err) // embedded at build time
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// Dockerfile returns the Dockerfile of server type name.
func Dockerfile(name string) ([]byte, error) {
	b, err := dockerfiles.ReadFile(name + "/Dockerfile")
	if err != nil {
		return nil, fmt.Errorf("no container image for server type %q; known: %s", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// baseRecipe is everything the base image is made from, hashed into its tag.
func baseRecipe() string {
	return fmt.Sprintf("debootstrap --variant=minbase --include=%s %s\n", strings.Join(baseInclude, ","), suite)
}

func hash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// ServersRef is the shared servers layer's name and tag.
func ServersRef() string { return serversRef("") }

// Ref is the image name and tag for server type name ("redis" -> lockcheck/redis:<hash>).
func Ref(name string) (string, error) { return ref(name, "") }

// The refs of a Builder with a Salt: the same recipes under other tags (see Builder.Salt).
func baseRef(salt string) string { return Repository + baseName + ":" + hash(baseRecipe()+salt) }

func serversRef(salt string) string {
	return Repository + serversName + ":" + hash(baseRef(salt), serversDockerfile())
}

func ref(name, salt string) (string, error) {
	df, err := Dockerfile(name)
	if err != nil {
		return "", err
	}
	return Repository + name + ":" + hash(serversRef(salt), string(df)), nil
}

var setupOnce sync.Once

// setup configures testcontainers-go for this machine before its first use (it reads its
// configuration once): Ryuk, its reaper container, cannot be pulled here, so it is off and
// lockcheck labels and removes its containers itself; and published ports are reached at
// 127.0.0.1 (without this, testcontainers may pick another address of the host and wait on it).
// Its chatty log goes nowhere; lockcheck logs what it does itself.
func setup() {
	setupOnce.Do(func() {
		for k, v := range map[string]string{"TESTCONTAINERS_RYUK_DISABLED": "true", "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1"} {
			if os.Getenv(k) == "" {
				_ = os.Setenv(k, v)
			}
		}
		tclog.SetDefault(tclog.NewNoopLogger())
	})
}

// ErrNoDocker says no Docker daemon answered.
var ErrNoDocker = errors.New("no Docker daemon answers")

// Connect returns a client of the machine's Docker daemon (DOCKER_HOST, else the default socket),
// or an error saying what to do when there is none.
func Connect(ctx context.Context) (*testcontainers.DockerClient, error) {
	setup()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		if _, err = cli.Ping(ctx, client.PingOptions{}); err != nil {
			_ = cli.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w (%v): install and start Docker (Debian: apt-get install docker.io, then start the docker service), or run on "+
			"local processes (--provider local)", ErrNoDocker, err)
	}
	return cli, nil
}

// Builder builds images with one Docker client. Log, if set, receives progress lines.
type Builder struct {
	cli *testcontainers.DockerClient
	Log func(format string, a ...any)
	// Salt, when set, tags every image of this builder apart from the ones the provider runs, so
	// that a benchmark can time a build from scratch without touching them (and Remove them after).
	Salt string

	mu   sync.Mutex             // guards refs
	refs map[string]*sync.Mutex // one lock per image ref
}

// NewBuilder returns a builder using cli.
func NewBuilder(cli *testcontainers.DockerClient) *Builder { return &Builder{cli: cli} }

func (b *Builder) logf(format string, a ...any) {
	if b.Log != nil {
		b.Log(format, a...)
	}
}

// Exists reports whether the image ref is there.
func (b *Builder) Exists(ctx context.Context, ref string) (bool, error) {
	_, err := b.cli.ImageInspect(ctx, ref)
	if err == nil {
		return true, nil
	}
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("inspect image %s: %w", ref, err)
}

// Built says what Ensure did for one image.
type Built struct {
	Ref   string
	Built bool          // false: it existed already
	Took  time.Duration // the build's time
}

// Ensure makes sure the image for server type name exists (building the base and the servers
// layer first when they are missing too) and returns its ref.
func (b *Builder) Ensure(ctx context.Context, name string) (string, []Built, error) {
	ref, err := ref(name, b.Salt)
	if err != nil {
		return "", nil, err
	}
	// One builder of each image at a time (two would only race); images of different server
	// types build side by side once their layers are there.
	unlock := b.lock(ref)
	defer unlock()
	if ok, err := b.Exists(ctx, ref); err != nil || ok {
		return ref, []Built{{Ref: ref}}, err
	}
	done, err := b.ensureLayers(ctx)
	if err != nil {
		return "", done, err
	}
	began := time.Now()
	b.logf("building %s from %s/Dockerfile", ref, name)
	df, err := Dockerfile(name)
	if err != nil {
		return "", done, err
	}
	if err := b.build(ctx, df, ref, serversRef(b.Salt), name); err != nil {
		return "", done, fmt.Errorf("build image %s: %w", ref, err)
	}
	done = append(done, Built{Ref: ref, Built: true, Took: time.Since(began)})
	b.logf("built %s in %s", ref, time.Since(began).Round(100*time.Millisecond))
	return ref, done, nil
}

// lock takes the lock of image ref and returns its release.
func (b *Builder) lock(ref string) func() {
	b.mu.Lock()
	if b.refs == nil {
		b.refs = map[string]*sync.Mutex{}
	}
	m := b.refs[ref]
	if m == nil {
		m = &sync.Mutex{}
		b.refs[ref] = m
	}
	b.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// ensureLayers ensures the base and the servers layer, which every server type's image is FROM.
func (b *Builder) ensureLayers(ctx context.Context) ([]Built, error) {
	unlock := b.lock(serversRef(b.Salt))
	defer unlock()
	base, err := b.ensureBase(ctx)
	if err != nil {
		return nil, err
	}
	servers, err := b.ensureServers(ctx)
	return []Built{base, servers}, err
}

// EnsureAll ensures every server type's image: the layers first, then the images side by side
// (each is a few seconds of the daemon's own work on the shared layer).
func (b *Builder) EnsureAll(ctx context.Context) ([]Built, error) {
	names := Names()
	results := make([][]Built, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { _, results[i], errs[i] = b.Ensure(ctx, name) })
	}
	wg.Wait()
	var out []Built
	for _, done := range results {
		for _, d := range done {
			// Every image lists the layers; the one that built them says so.
			if i := slices.IndexFunc(out, func(o Built) bool { return o.Ref == d.Ref }); i >= 0 {
				if d.Built {
					out[i] = d
				}
				continue
			}
			out = append(out, d)
		}
	}
	return out, errors.Join(errs...)
}

// Remove removes the images refs (what a salted build made); an image already gone is no error.
func (b *Builder) Remove(ctx context.Context, refs ...string) error {
	var errs []error
	for _, ref := range refs {
		if _, err := b.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image %s: %w", ref, err))
		}
	}
	return errors.Join(errs...)
}

// ensureServers builds the shared servers layer if it is missing (the base exists).
func (b *Builder) ensureServers(ctx context.Context) (Built, error) {
	ref := serversRef(b.Salt)
	if ok, err := b.Exists(ctx, ref); err != nil || ok {
		return Built{Ref: ref}, err
	}
	began := time.Now()
	b.logf("building %s: every server type's packages in one apt step (a few minutes)", ref)
	if err := b.build(ctx, []byte(serversDockerfile()), ref, baseRef(b.Salt), serversName); err != nil {
		return Built{Ref: ref}, fmt.Errorf("build image %s: %w", ref, err)
	}
	b.logf("built %s in %s", ref, time.Since(began).Round(100*time.Millisecond))
	return Built{Ref: ref, Built: true, Took: time.Since(began)}, nil
}

// ensureBase builds the base image if it is missing: debootstrap into a temporary folder, then
// import the folder as an image.
func (b *Builder) ensureBase(ctx context.Context) (Built, error) {
	ref := baseRef(b.Salt)
	if ok, err := b.Exists(ctx, ref); err != nil || ok {
		return Built{Ref: ref}, err
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return Built{}, fmt.Errorf("the base image %s is missing and debootstrap, which makes it, is not installed: apt-get install -y "+
			"debootstrap (scripts/install-deps.sh does)", ref)
	}
	if os.Geteuid() != 0 {
		return Built{}, fmt.Errorf("the base image %s is missing: debootstrap must run as root to make it (run `sudo lockcheck images`)", ref)
	}
	began := time.Now()
	dir, err := os.MkdirTemp("", "lockcheck-base-*")
	if err != nil {
		return Built{}, err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	src := hostSources()
	args := []string{"--variant=minbase", "--include=" + strings.Join(baseInclude, ","), suite, root}
	if src.mirror != "" {
		args = append(args, src.mirror)
	}
	b.logf("building %s: debootstrap %s (about half a minute)", ref, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, "debootstrap", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Built{}, fmt.Errorf("debootstrap: %w\n%s", err, tail(out.String(), 2000))
	}
	if err := finishRoot(root, src); err != nil {
		return Built{}, err
	}
	if err := b.importDir(ctx, root, ref); err != nil {
		return Built{}, fmt.Errorf("import %s: %w", ref, err)
	}
	b.logf("built %s in %s", ref, time.Since(began).Round(100*time.Millisecond))
	return Built{Ref: ref, Built: true, Took: time.Since(began)}, nil
}

// finishRoot writes the apt sources (the host's Debian mirrors, so apt inside builds reaches
// what the host reaches) and trims what an image does not need.
func finishRoot(root string, src sources) error {
	if lines := src.lines(); lines != "" {
		if err := os.WriteFile(filepath.Join(root, "etc/apt/sources.list"), []byte(lines), 0o644); err != nil {
			return err
		}
	}
	// Keep images small: no package lists or caches in the layer.
	for _, d := range []string{"var/lib/apt/lists", "var/cache/apt/archives"} {
		entries, _ := os.ReadDir(filepath.Join(root, d))
		for _, e := range entries {
			if e.Name() != "partial" && e.Name() != "lock" {
				_ = os.RemoveAll(filepath.Join(root, d, e.Name()))
			}
		}
	}
	return nil
}

// importDir streams root as a tar (made by tar(1), which keeps owners, devices and links) into
// the daemon as image ref.
func (b *Builder) importDir(ctx context.Context, root, ref string) error {
	cmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", root, "-c", ".")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	name, tag, _ := strings.Cut(ref, ":")
	rc, err := b.cli.ImageImport(ctx, client.ImageImportSource{Source: stdout, SourceName: "-"}, name,
		client.ImageImportOptions{Tag: tag, Changes: []string{"LABEL " + LabelImage + "=" + baseName, `CMD ["/bin/sh"]`}})
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	msgErr := readMessages(rc, nil)
	rc.Close()
	if werr := cmd.Wait(); werr != nil {
		return fmt.Errorf("tar: %w: %s", werr, stderr.String())
	}
	return msgErr
}

// build builds Dockerfile df as ref, FROM base, labelled with what it is for.
func (b *Builder) build(ctx context.Context, df []byte, ref, base, label string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := tw.Write(df); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	res, err := b.cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags:        []string{ref},
		Dockerfile:  "Dockerfile",
		BuildArgs:   map[string]*string{"BASE": &base},
		Labels:      map[string]string{LabelImage: label},
		Remove:      true,
		ForceRemove: true,
	})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var lines []string
	err = readMessages(res.Body, func(s string) { lines = append(lines, s) })
	if err != nil {
		return fmt.Errorf("%w\n%s", err, tail(strings.Join(lines, ""), 2000))
	}
	return nil
}

// readMessages reads the daemon's JSON progress messages and returns the first error among them.
func readMessages(r io.Reader, stream func(string)) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var m struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		if m.Stream != "" && stream != nil {
			stream(m.Stream)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// sources are the host's Debian archive addresses (apt's configuration), so the base image
// fetches from where the host does.
type sources struct {
	mirror   string // the main archive, for suite and suite-updates
	security string // the security archive
}

func (s sources) lines() string {
	if s.mirror == "" {
		return ""
	}
	out := fmt.Sprintf("deb %s %s main\ndeb %s %s-updates main\n", s.mirror, suite, s.mirror, suite)
	if s.security != "" {
		out += fmt.Sprintf("deb %s %s-security main\n", s.security, suite)
	}
	return out
}

// hostSources reads /etc/apt/sources.list and /etc/apt/sources.list.d/*.{list,sources}.
func hostSources() sources {
	var entries [][2]string // (uri, suite)
	files := []string{"/etc/apt/sources.list"}
	more, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	files = append(files, more...)
	deb822, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			entries = append(entries, parseOneLine(string(b))...)
		}
	}
	for _, f := range deb822 {
		b, err := os.ReadFile(f)
		if err == nil {
			entries = append(entries, parseDeb822(string(b))...)
		}
	}
	return pickSources(entries)
}

func pickSources(entries [][2]string) sources {
	var s sources
	for _, e := range entries {
		switch e[1] {
		case suite:
			if s.mirror == "" {
				s.mirror = e[0]
			}
		case suite + "-security", suite + "/updates":
			if s.security == "" {
				s.security = e[0]
			}
		}
	}
	return s
}

// parseOneLine reads "deb [options] URI suite components" lines.
func parseOneLine(text string) [][2]string {
	var out [][2]string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) >= 2 {
			out = append(out, [2]string{f[0], f[1]})
		}
	}
	return out
}

// parseDeb822 reads stanzas with Types, URIs and Suites fields.
func parseDeb822(text string) [][2]string {
	var out [][2]string
	for _, stanza := range strings.Split(text, "\n\n") {
		fields := map[string][]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			if ok && !strings.HasPrefix(line, " ") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.Fields(v)
			}
		}
		if en := fields["enabled"]; len(en) > 0 && en[0] == "no" {
			continue
		}
		if !slices.Contains(fields["types"], "deb") {
			continue
		}
		for _, uri := range fields["uris"] {
			for _, s := range fields["suites"] {
				out = append(out, [2]string{uri, s})
			}
		}
	}
	return out
}
