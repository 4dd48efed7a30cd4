// Package adapters holds lock adapters: short programs that put a lock library people run, as
// Debian packages it, behind lockcheck's lock-client protocol (docs/LOCK-PROTOCOL.md), so that
// lockcheck checks the library itself, unmodified. The programs are the files beside this one;
// they are built into lockcheck, and Command writes them out (and compiles the Java one) once per
// version, in the user's cache folder.
package adapters

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockcheck/lockcheck/internal/appcds"
)

//go:embed lockproto.py redis_py_lock.py kazoo_lock.py CuratorLock.java
var sources embed.FS

// Python is Debian's interpreter, which has Debian's python3-* libraries (the python3 first on
// PATH may be another one without them).
const Python = "/usr/bin/python3"

// jarDir is where Debian installs Java libraries.
const jarDir = "/usr/share/java"

// Need is a file or program an adapter needs, and the Debian package that provides it.
type Need struct {
	Path    string // an absolute path, or a program looked up in PATH
	Package string
}

// adapter is one adapter: its files, what it needs, and its command line once written out.
// Variants of one program (the same files run with other arguments) name the same build, so
// they share one folder and one compilation.
type adapter struct {
	build   string // the folder's name in the cache: the program's first design
	files   []string
	needs   []Need
	compile func(dir string) error // nil: nothing to build
	// command is the program's command line; a JVM program puts jvmFlags before its class path.
	command func(dir string, jvmFlags []string) []string
	// archive names a JVM program's class-data archive (internal/appcds), which its command maps
	// once made, and classpath is its class path (jars only, as class-data sharing wants).
	// Empty: not a JVM program.
	archive   string
	classpath func(dir string) string
}

// curatorJars are the jars of Curator's InterProcessMutex and what it needs (ZooKeeper's client,
// Guava, SLF4J with a backend that logs to stderr, Jackson for the protocol's JSON).
var curatorJars = []string{
	"curator-recipes.jar", "curator-framework.jar", "curator-client.jar", "zookeeper.jar",
	"zookeeper-jute.jar", "guava.jar", "slf4j-api.jar", "slf4j-simple.jar",
	"jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar",
}

func curatorClasspath(extra ...string) string {
	parts := append([]string(nil), extra...)
	for _, j := range curatorJars {
		parts = append(parts, filepath.Join(jarDir, j))
	}
	return strings.Join(parts, ":")
}

var (
	redisPyNeeds = []Need{{Python, "python3"}, {"/usr/lib/python3/dist-packages/redis/lock.py", "python3-redis"}}
	kazooNeeds   = []Need{{Python, "python3"}, {"/usr/lib/python3/dist-packages/kazoo/recipe/lock.py", "python3-kazoo"}}
	curatorNeeds = []Need{{"java", "default-jre-headless"}, {"javac", "default-jdk-headless"},
		{"jar", "default-jdk-headless"}, {filepath.Join(jarDir, "curator-recipes.jar"), "libcurator-recipes-java"},
		{filepath.Join(jarDir, "jackson-databind.jar"), "libjackson2-databind-java"}}
)

// python runs script with args (the design's variant of the script).
func python(build, script string, needs []Need, args ...string) adapter {
	return adapter{
		build: build,
		files: []string{"lockproto.py", script},
		needs: needs,
		command: func(dir string, _ []string) []string {
			return append([]string{Python, filepath.Join(dir, script)}, args...)
		},
	}
}

// curator runs CuratorLock in mode (mutex, rw, rw-downgrade).
func curator(mode string) adapter {
	classpath := func(dir string) string { return curatorClasspath(filepath.Join(dir, curatorJar)) }
	return adapter{
		build: "curator",
		files: []string{"CuratorLock.java"},
		needs: curatorNeeds,
		// Compiled once per version with javac rather than run as source (java File.java):
		// source launch compiles in every client's JVM at every start, which costs each client
		// about a second of CPU more while four of them start at once on two cores. Packed into a
		// jar, since a class-data archive takes only jars on its class path.
		compile: func(dir string) error {
			classes := filepath.Join(dir, "classes")
			for _, argv := range [][]string{
				{"javac", "-nowarn", "-d", classes, "-cp", curatorClasspath(), filepath.Join(dir, "CuratorLock.java")},
				{"jar", "--create", "--file", filepath.Join(dir, curatorJar), "-C", classes, "."},
			} {
				if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
					return fmt.Errorf("%s: %v: %s", strings.Join(argv[:2], " "), err, out)
				}
			}
			return os.RemoveAll(classes)
		},
		command: func(dir string, flags []string) []string {
			return append(append([]string{"java", "-Xmx64m", "-XX:+UseSerialGC",
				"-XX:TieredStopAtLevel=1", // C1 only: a faster start
				"-XX:-UsePerfData",        // no /tmp/hsperfdata_* files left behind by a SIGKILL
			}, flags...), "-cp", classpath(dir), "CuratorLock", mode)
		},
		archive:   "curator-client",
		classpath: classpath,
	}
}

// curatorJar is CuratorLock compiled, in the adapter's folder.
const curatorJar = "curatorlock.jar"

// registry: each design run by an adapter. The variants are the libraries' own options and the
// ways their users call them (the programs' headers say what each does).
var registry = map[string]adapter{
	"redis-py":             python("redis-py", "redis_py_lock.py", redisPyNeeds),
	"redis-py-no-timeout":  python("redis-py", "redis_py_lock.py", redisPyNeeds, "--no-timeout"),
	"redis-py-reacquire":   python("redis-py", "redis_py_lock.py", redisPyNeeds, "--reacquire"),
	"kazoo":                python("kazoo", "kazoo_lock.py", kazooNeeds),
	"kazoo-rw":             python("kazoo", "kazoo_lock.py", kazooNeeds, "--rw"),
	"kazoo-try":            python("kazoo", "kazoo_lock.py", kazooNeeds, "--try"),
	"curator":              curator("mutex"),
	"curator-rw":           curator("rw"),
	"curator-rw-downgrade": curator("rw-downgrade"),
}

// Names lists the adapters.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Check reports what this machine lacks for the named adapter, with the Debian packages to
// install (scripts/install-deps.sh installs them).
func Check(name string) error {
	a, ok := registry[name]
	if !ok {
		return fmt.Errorf("no adapter %q; adapters: %s", name, strings.Join(Names(), ", "))
	}
	var missing, pkgs []string
	for _, n := range a.needs {
		var err error
		if filepath.IsAbs(n.Path) {
			_, err = os.Stat(n.Path)
		} else {
			_, err = exec.LookPath(n.Path)
		}
		if err != nil {
			missing = append(missing, n.Path)
			pkgs = append(pkgs, n.Package)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the %s adapter needs %s: install the Debian packages %s (scripts/install-deps.sh does)",
			name, strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	return nil
}

// Command returns the command line that runs the named adapter, after writing its files out
// (and compiling them) if this version has not been yet.
func Command(name string) ([]string, error) {
	if err := Check(name); err != nil {
		return nil, err
	}
	a := registry[name]
	dir, err := materialise(a)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", name, err)
	}
	var flags []string
	if a.archive != "" {
		flags = a.classData(dir).Flags() // none until the archive is made
	}
	return a.command(dir, flags), nil
}

// Archive is the named adapter's class-data archive, and its command line with given JVM flags
// before its class path (to make the archive); false for an adapter that is not a JVM program.
// A client's JVM that maps the archive starts on about half the CPU (docs/MATRIX.md).
func Archive(name string) (appcds.Archive, func(flags []string) []string, bool) {
	a, ok := registry[name]
	if !ok || a.archive == "" || Check(name) != nil {
		return appcds.Archive{}, nil, false
	}
	dir, err := materialise(a)
	if err != nil {
		return appcds.Archive{}, nil, false
	}
	return a.classData(dir), func(flags []string) []string { return a.command(dir, flags) }, true
}

func (a adapter) classData(dir string) appcds.Archive {
	return appcds.Archive{Name: a.archive, Classpath: a.classpath(dir)}
}

// layout is the version of what a folder holds besides the files (2: the Java program as a jar),
// part of its name so that a folder built the older way is not taken for a new one.
const layout = 2

// materialise writes an adapter's files into <cache>/lockcheck/adapters/<build>-<hash> and builds
// them there, once: a folder is complete when it exists, since it is renamed into place only
// after it was written and built (several workers may start at once; one rename wins).
func materialise(a adapter) (string, error) {
	name := a.build
	h := sha256.New()
	fmt.Fprintf(h, "layout %d\n", layout)
	for _, f := range a.files {
		b, err := sources.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	root = filepath.Join(root, "lockcheck", "adapters")
	dir := filepath.Join(root, name+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	// One build at a time (every client of a run starts at once): the others wait, then find it.
	if lock, err := os.OpenFile(filepath.Join(root, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644); err == nil {
		defer lock.Close()
		_ = unix.Flock(int(lock.Fd()), unix.LOCK_EX) // released when the file is closed
		if _, err := os.Stat(dir); err == nil {
			return dir, nil
		}
	}
	tmp, err := os.MkdirTemp(root, name+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // gone after the rename; left only if something failed
	for _, f := range a.files {
		b, _ := sources.ReadFile(f)
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o755); err != nil {
			return "", err
		}
	}
	if a.compile != nil {
		if err := a.compile(tmp); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return dir, nil // another process was first
		}
		return "", err
	}
	return dir, nil
}
