//go:build !quickstart

package quickstart

const built = false
