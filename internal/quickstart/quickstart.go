// Package quickstart says whether this program is the small lockcheck that `make run` builds for
// a first run (go build -tags quickstart): Redis and its designs on local processes, without the
// other service kinds, their client libraries, the Docker client and the report's plots, which
// take most of the build's time on a fresh machine. Files that only the whole lockcheck needs
// carry the build constraint `!quickstart`; the registries name this build in their "unknown
// name" errors.
package quickstart

// Missing is what an error about a name this program does not know adds to its message: in the
// quickstart build, that the name may belong to the whole lockcheck and how to build it.
func Missing() string {
	if !built {
		return ""
	}
	return " (this lockcheck is the quick-start build of make run, with Redis and local processes " +
		"only: make build builds every lock, service kind and provider)"
}
