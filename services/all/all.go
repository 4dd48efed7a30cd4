// Package all registers every kind of lock service: import it (for its side effects) in a program
// that loads or runs scenarios. It registers no provider (package providers/all does): a program
// picks where servers may run, and only one that offers Docker links its client. The quick-start
// build (package internal/quickstart) registers Redis alone; servers.go adds the others.
package all

import _ "github.com/lockcheck/lockcheck/services/redis"
