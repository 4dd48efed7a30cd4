//go:build !quickstart

package all

import _ "github.com/lockcheck/lockcheck/providers/docker"
