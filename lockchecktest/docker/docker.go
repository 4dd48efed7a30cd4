// Package docker lets lockchecktest's checks run their servers in Docker containers: import it for
// its side effects in the test that wants them, and name `provider: docker` in the check's
// scenario file. It is a package of its own so that a project that never uses Docker does not
// link the Docker client.
package docker

import _ "github.com/lockcheck/lockcheck/providers/docker"
