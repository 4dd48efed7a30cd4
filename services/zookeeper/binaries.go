package zookeeper

import (
	"path/filepath"
	"strings"

	"github.com/lockcheck/lockcheck/providers"
)

// jarDir is where Debian installs Java libraries; a variable so tests can point it elsewhere.
var jarDir = "/usr/share/java"

// mainClass runs a ZooKeeper server: standalone when zoo.cfg lists no server.N, else a
// member of the ensemble.
const mainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// jar is a jar a ZooKeeper server needs and the Debian package that provides it.
type jar struct {
	name, pkg string
}

// jars go on the classpath. zookeeper.jar's manifest (Debian's) has a Class-Path naming every
// jar the server depends on (zookeeper-jute, netty, slf4j-api, metrics, jetty, ...), all pulled in
// by the package's dependencies, so only a logging backend has to be added.
var jars = []jar{
	{"zookeeper.jar", "zookeeper"},
	{"slf4j-simple.jar", "libslf4j-java"}, // a dependency of zookeeper, named for who removed it
}

// classpath is the -cp argument of a ZooKeeper server.
func classpath() string {
	parts := make([]string, len(jars))
	for i, j := range jars {
		parts[i] = filepath.Join(jarDir, j.name)
	}
	return strings.Join(parts, ":")
}

// needs is what a server needs on a machine that runs it directly: java and the jars, with their
// Debian packages (scripts/install-deps.sh installs them).
func needs() []providers.Need {
	out := []providers.Need{{Path: "java", Package: "default-jre-headless"}}
	for _, j := range jars {
		out = append(out, providers.Need{Path: filepath.Join(jarDir, j.name), Package: j.pkg})
	}
	return out
}
