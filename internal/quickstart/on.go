//go:build quickstart

package quickstart

const built = true
