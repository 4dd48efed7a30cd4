package lockchecktest

// What a check can run on: every kind of lock service lockcheck knows, started as local
// processes. Docker containers need the docker provider, which brings the Docker client: a test
// that wants them imports package lockchecktest/docker too.
import (
	_ "github.com/lockcheck/lockcheck/providers/local"
	_ "github.com/lockcheck/lockcheck/services/all"
)
