package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// zkJarDir is where Debian installs Java libraries; a variable so tests can point it elsewhere.
var zkJarDir = "/usr/share/java"

// zkMainClass runs a ZooKeeper server: standalone when zoo.cfg lists no server.N, else a
// member of the ensemble.
const zkMainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// zkJar is a jar a ZooKeeper server needs and the Debian package that provides it.
type zkJar struct {
	name, pkg string
}

// zkJars go on the classpath. zookeeper.jar's manifest (Debian's) has a Class-Path naming every
// jar the server depends on (zookeeper-jute, netty, slf4j-api, metrics, jetty, ...), all pulled in
// by the package's dependencies, so only a logging backend has to be added.
var zkJars = []zkJar{
	{"zookeeper.jar", "zookeeper"},
	{"slf4j-simple.jar", "libslf4j-java"}, // a dependency of zookeeper, named for who removed it
}

// zkClasspath is the -cp argument of a ZooKeeper server.
func zkClasspath() string {
	parts := make([]string, len(zkJars))
	for i, j := range zkJars {
		parts[i] = filepath.Join(zkJarDir, j.name)
	}
	return strings.Join(parts, ":")
}

// CheckZooKeeper reports what a ZooKeeper server needs and is missing — java in PATH, the jars
// under /usr/share/java — each with the Debian package to install (scripts/install-deps.sh
// installs them).
func CheckZooKeeper() error {
	var errs []error
	if _, err := exec.LookPath("java"); err != nil {
		errs = append(errs, fmt.Errorf("java not found in PATH: install the Debian package default-jre-headless (apt-get install -y default-jre-headless)"))
	}
	var missing []string
	pkgs := map[string]bool{}
	var pkgList []string
	for _, j := range zkJars {
		path := filepath.Join(zkJarDir, j.name)
		if _, err := os.Stat(path); err != nil {
			missing = append(missing, path)
			if !pkgs[j.pkg] {
				pkgs[j.pkg] = true
				pkgList = append(pkgList, j.pkg)
			}
		}
	}
	if len(missing) > 0 {
		p := strings.Join(pkgList, " ")
		errs = append(errs, fmt.Errorf("%s not found: install the Debian package(s) %s (apt-get install -y %s)", strings.Join(missing, ", "), p, p))
	}
	return errors.Join(errs...)
}
