package cluster

import (
	"errors"
	"fmt"
	"os/exec"
)

// binary is an external program the cluster runs, and the Debian package that provides it.
type binary struct {
	name, pkg string
}

// binaries lists what Start needs. Toxiproxy runs in-process and needs nothing.
var binaries = []binary{
	{"redis-server", "redis-server"},
}

// CheckBinaries reports every binary the cluster needs that is not in PATH, each with the Debian
// package to install.
func CheckBinaries() error {
	var errs []error
	for _, b := range binaries {
		if _, err := exec.LookPath(b.name); err != nil {
			errs = append(errs, fmt.Errorf("%s not found in PATH: install the Debian package %s (apt-get install -y %s)", b.name, b.pkg, b.pkg))
		}
	}
	return errors.Join(errs...)
}
