// Package appcds keeps a Java program's application class-data archive (AppCDS): the classes a
// run of the program loads, parsed and verified once and mapped into every later JVM, which then
// starts on less CPU. A matrix starts a ZooKeeper JVM per server and a Curator JVM per client per
// cell, several at once on two cores; each spent a third (a server) to half (a client) of its
// start's CPU loading and verifying the same classes.
//
// The archive is made once per machine, per program, class path and java binary (the name of its
// file says which), by running the program once with -XX:ArchiveClassesAtExit until it has done
// what a run does, then letting it exit (SIGTERM for a server, its own end for a client): the JVM
// writes the archive as it exits. The class path must be jars only. A JVM
// given an archive that does not match what it runs ignores it and loads classes as usual, so an
// archive can only save time.
package appcds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockcheck/lockcheck/internal/proc"
)

// Archive is one program's archive.
type Archive struct {
	Name      string // the program, for the file's name: "zookeeper"
	Classpath string // the JVM's -cp: the archive holds these jars' classes
}

// Path is where the archive lives: under the user's cache, named by the program and a hash of the
// class path's jars (path, size, time) and of the java binary, so that an upgrade makes a new one.
func (a Archive) Path() string {
	h := sha256.New()
	java, _ := exec.LookPath("java")
	if real, err := filepath.EvalSymlinks(java); err == nil {
		java = real
	}
	for _, f := range append([]string{java}, strings.Split(a.Classpath, ":")...) {
		fmt.Fprintf(h, "%s", f)
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(h, " %d %d", st.Size(), st.ModTime().UnixNano())
		}
		fmt.Fprintln(h)
	}
	return filepath.Join(dir(), a.Name+"-"+hex.EncodeToString(h.Sum(nil))[:12]+".jsa")
}

func dir() string {
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	return filepath.Join(root, "lockcheck", "appcds")
}

// Flags are the JVM options that map the archive, or none when it has not been made.
func (a Archive) Flags() []string {
	p := a.Path()
	if _, err := os.Stat(p); err != nil {
		return nil
	}
	// Quiet: a JVM that cannot use the archive (another java, a changed jar) says so on every start.
	return []string{"-XX:SharedArchiveFile=" + p, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"}
}

// tries: a process tries to make an archive (by its path) once; after a failure its JVMs start
// without one rather than pay for the attempt at every start.
var tries sync.Map // path -> *sync.Once

// MakeOnce is Make tried at most once per process, and not at all when the archive exists: the
// programs started after it map the archive or, if it could not be made, start without it (only
// slower).
func (a Archive) MakeOnce(ctx context.Context, train func(ctx context.Context, flags []string) error) {
	if a.Flags() != nil {
		return
	}
	once, _ := tries.LoadOrStore(a.Path(), new(sync.Once))
	once.(*sync.Once).Do(func() { _ = a.Make(ctx, train) })
}

// Make makes the archive if it is missing, by train: a run of the program with the given JVM
// flags (the archive's) that returns once the program has exited after doing what a run does
// (RunUntilReady for a server). Processes that start the program at once make it once: the
// others wait for the first, then find it. On any failure there is simply no archive.
func (a Archive) Make(ctx context.Context, train func(ctx context.Context, flags []string) error) error {
	p := a.Path()
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(p+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	_ = unix.Flock(int(lock.Fd()), unix.LOCK_EX) // released when the file is closed
	if _, err := os.Stat(p); err == nil {
		return nil // made while we waited
	}
	tmp := fmt.Sprintf("%s.tmp-%d", p, os.Getpid())
	defer os.Remove(tmp) // gone after the rename; left only if the JVM wrote it and the rename failed
	if err := train(ctx, []string{"-XX:ArchiveClassesAtExit=" + tmp, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"}); err != nil {
		return fmt.Errorf("appcds: %s: %w", a.Name, err)
	}
	if _, err := os.Stat(tmp); err != nil {
		return fmt.Errorf("appcds: %s wrote no archive: %w", a.Name, err)
	}
	return os.Rename(tmp, p)
}

// RunUntilReady runs argv until ready returns (a server that serves), then stops it with
// SIGTERM, on which the JVM writes its archive as it exits. The program dies with us, as every
// process lockcheck starts.
func RunUntilReady(ctx context.Context, argv []string, ready func(context.Context) error) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := proc.Start(cmd); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := ready(rctx); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("did not get ready: %w", err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return errors.New("did not exit after SIGTERM")
	}
}
