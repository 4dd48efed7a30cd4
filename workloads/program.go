package workloads

import (
	"debug/buildinfo"
	"path/filepath"
	"strings"
	"sync"
)

// Build is a digest of the sources the program was built from, set by `make build` (-ldflags -X
// .../workloads.Build=...) in lockcheck and lockcheck-worker alike; empty in a plain go build.
var Build string

// WorkerProgramName is the client-only program `make build` puts beside lockcheck.
const WorkerProgramName = "lockcheck-worker"

var programs sync.Map // exe → []string

// Program is the command line that starts a client for the controller exe: lockcheck-worker
// beside exe when both carry the same Build (read from the worker's build information, without
// running it), else exe's own hidden worker command. A worker from other sources could speak
// another version of the protocol; one that starts in a third of the CPU is worth finding: a
// matrix starts a thousand clients.
func Program(exe string) []string {
	if p, ok := programs.Load(exe); ok {
		return p.([]string)
	}
	p := []string{exe, "worker"}
	sibling := filepath.Join(filepath.Dir(exe), WorkerProgramName)
	if Build != "" && builtWith(sibling, Build) {
		p = []string{sibling, "worker"}
	}
	programs.Store(exe, p)
	return p
}

// builtWith reports whether the program at path was linked with workloads.Build set to build.
func builtWith(path, build string) bool {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return false
	}
	for _, s := range info.Settings {
		if s.Key != "-ldflags" {
			continue
		}
		for _, f := range strings.Fields(s.Value) {
			if v, ok := strings.CutPrefix(strings.TrimPrefix(f, "-X="), "github.com/lockcheck/lockcheck/workloads.Build="); ok && v == build {
				return true
			}
		}
	}
	return false
}
