// Package modbuild builds a Go program at a version taken from the Go module proxy into the
// user's cache, once: a lock server at a version no Debian package ships (etcd 3.4.3, 3.5.x).
//
// The build is what a person does by hand: an empty module that requires the program's module at
// that version (`go get`), then `go build` of its main package. The program's own go.mod decides
// its dependencies' versions; its replace directives do not apply (Go ignores them in a
// dependency), so only a module whose published requirements build is usable. The binary is
// renamed into place only once built and checked, so a binary that exists is complete; an
// exclusive file lock makes concurrent runs build once (the others wait, then find it).
package modbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Program is one program at one version.
type Program struct {
	Name    string // the binary's name in its folder: "etcd"
	Module  string // the module on the proxy: "go.etcd.io/etcd/server/v3"
	Version string // the module's version on the proxy: "v3.5.21", or a pseudo-version
	Package string // the main package to build, in Module
	// Folder names the program's folder under the cache ("etcd-3.5.21"): one per version.
	Folder string
	// Check, if set, runs on the built binary before it is put in place (its --version says the
	// version it should).
	Check func(ctx context.Context, binary string) error
}

// Ref is module@version, as go names it.
func (p Program) Ref() string { return p.Module + "@" + p.Version }

// Root is the folder that holds every built program: <user cache>/lockcheck/servers.
func Root() string {
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	return filepath.Join(root, "lockcheck", "servers")
}

// Path is where p's binary is once built.
func Path(p Program) string { return filepath.Join(Root(), p.Folder, p.Name) }

// Built reports whether p's binary exists already.
func Built(p Program) bool {
	_, err := os.Stat(Path(p))
	return err == nil
}

// Ensure returns p's binary, building it first if it does not exist. log, if set, is told when a
// build starts and how long it took (a build takes minutes: a person should know why nothing
// happens). A failure names the module, the version and go's first error line; go's whole output
// is kept in the cache folder beside the binary's (<folder>.build.log).
func Ensure(ctx context.Context, p Program, log func(format string, a ...any)) (string, error) {
	bin := Path(p)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	root := Root()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(root, p.Folder+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close() // releases the lock
	if err := flock(ctx, lock); err != nil {
		return "", fmt.Errorf("wait for another run building %s: %w", p.Ref(), err)
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // built while we waited
	}
	// Leftovers of a build that was killed (we hold the lock: nobody else is building).
	if old, _ := filepath.Glob(filepath.Join(root, "."+p.Folder+".build-*")); len(old) > 0 {
		for _, o := range old {
			_ = os.RemoveAll(o)
		}
	}
	if log != nil {
		log("building %s from %s (once; it takes a few minutes)", p.Folder, p.Ref())
	}
	began := time.Now()
	if err := build(ctx, p, root); err != nil {
		return "", err
	}
	if log != nil {
		log("built %s in %s: %s", p.Folder, time.Since(began).Round(time.Second), bin)
	}
	return bin, nil
}

// flock takes an exclusive lock on f, giving up when ctx ends.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// build builds p in a temporary folder under root and renames the binary into place.
func build(ctx context.Context, p Program, root string) error {
	tmp, err := os.MkdirTemp(root, "."+p.Folder+".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	logPath := filepath.Join(root, p.Folder+".build.log")
	var out bytes.Buffer
	fail := func(step string, err error) error {
		_ = os.WriteFile(logPath, out.Bytes(), 0o644)
		if ctx.Err() != nil {
			return fmt.Errorf("build %s: %w", p.Ref(), ctx.Err())
		}
		return fmt.Errorf("build %s: %s: %s (go's output: %s)", p.Ref(), step, firstError(out.String(), err), logPath)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("build %s: the Go toolchain (go) is not on PATH; lockcheck builds this server with it", p.Ref())
	}
	mod := "module lockcheck.invalid/build\n\ngo 1.21\n"
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(mod), 0o644); err != nil {
		return err
	}
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = tmp
		// Nothing of the user's workspace or flags: only the program's own go.mod decides.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false", "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = &out, &out
		fmt.Fprintf(&out, "$ go %s\n", strings.Join(args, " "))
		return cmd.Run()
	}
	if err := run("get", p.Package+"@"+p.Version); err != nil {
		return fail("go get", err)
	}
	staged := filepath.Join(tmp, p.Name)
	if err := run("build", "-trimpath", "-o", staged, p.Package); err != nil {
		return fail("go build", err)
	}
	if p.Check != nil {
		if err := p.Check(ctx, staged); err != nil {
			_ = os.WriteFile(logPath, out.Bytes(), 0o644)
			return fmt.Errorf("build %s: the built program: %w", p.Ref(), err)
		}
	}
	_ = os.WriteFile(logPath, out.Bytes(), 0o644)
	dir := filepath.Join(root, p.Folder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The binary last: its presence says the folder is complete.
	note := fmt.Sprintf("%s built from %s (package %s) on %s\n", p.Name, p.Ref(), p.Package, time.Now().UTC().Format(time.RFC3339))
	_ = os.WriteFile(filepath.Join(dir, "BUILT-FROM"), []byte(note), 0o644)
	return os.Rename(staged, filepath.Join(dir, p.Name))
}

// firstError is the first line of go's output that says what went wrong (not its progress lines
// or the command lines echoed above them), or err when there is none.
func firstError(out string, err error) string {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "", strings.HasPrefix(line, "$ "), strings.HasPrefix(line, "#"),
			strings.HasPrefix(line, "go: downloading "), strings.HasPrefix(line, "go: finding "),
			strings.HasPrefix(line, "go: added "), strings.HasPrefix(line, "go: upgraded "):
			continue
		}
		return line
	}
	return err.Error()
}
