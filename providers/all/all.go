// Package all registers every provider — local processes, a user's own cluster (external) and
// Docker containers: import it (for its side effects) in a program that offers them all, as
// lockcheck does. The docker provider links the Docker client: a program that does not need it
// imports providers/local (and providers/external) alone, and the quick-start build leaves it out
// (docker.go).
package all

import (
	_ "github.com/lockcheck/lockcheck/providers/external"
	_ "github.com/lockcheck/lockcheck/providers/local"
)
