package main

// lockcheck init --lang go --library MODULE@VERSION: a Go adapter of a library lockcheck does not
// ship, and the design file that builds it at any version (locks/gosource.go).

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/lockcheck/lockcheck/internal/starter"
	"github.com/lockcheck/lockcheck/locks"
)

func initLibrary(out io.Writer, o starter.Options, library string, force bool) error {
	module, version, _ := strings.Cut(library, "@")
	switch {
	case o.Lang != "go":
		return &exitError{exitHarness, fmt.Errorf("--library takes --lang go (a Go adapter of the library), not %q", o.Lang)}
	case o.Service != "" && o.Service != locks.Redis:
		return &exitError{exitHarness, fmt.Errorf("--library writes a Redis template; got --service %s (edit its design file's service: after)", o.Service)}
	case module == "" || !strings.Contains(module, "/"):
		return &exitError{exitHarness, fmt.Errorf("--library %q: give the library's module and a version, e.g. github.com/bsm/redislock@v0.9.4", library)}
	}
	if version != "" {
		version = "v" + strings.TrimPrefix(version, "v")
	}
	if msg := locks.CheckVersion(version); msg != "" {
		return &exitError{exitHarness, fmt.Errorf("--library %s: %s", library, msg)}
	}
	name := libraryName(module)
	design := filepath.Join(o.Dir, name+".yaml")
	files := []starter.File{
		{Path: design, Mode: 0o644, Text: []byte(fmt.Sprintf(libraryDesign, module, name, name, module, version))},
		{Path: filepath.Join(o.Dir, name+"_adapter.go"), Mode: 0o644, Text: []byte(fmt.Sprintf(libraryAdapter, name, module, module))},
	}
	if err := starter.Write(files, force); err != nil {
		return &exitError{exitHarness, err}
	}
	for _, f := range files {
		fmt.Fprintf(out, "wrote %s\n", f.Path)
	}
	fmt.Fprintf(out, "\nnext: put %s's calls in %s_adapter.go, then\n  lockcheck matrix --locks %s@%s,%s@NEXT --baseline-lock %s@%s --faults none,pause-after-acquire,pause-before-write\n",
		module, name, design, version, design, design, version)
	return nil
}

// libraryName is a design's name for a module: its last element, without a major version suffix
// (github.com/go-redsync/redsync/v4: redsync).
func libraryName(module string) string {
	base := path.Base(module)
	if regexp.MustCompile(`^v[0-9]+$`).MatchString(base) && strings.Contains(module, "/") {
		base = path.Base(path.Dir(module))
	}
	base = regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(base, "-")
	if strings.Trim(base, "-") == "" {
		return "my-lock"
	}
	return base
}

const libraryDesign = `# %s at any version: lockcheck builds %s_adapter.go (with its lockproto.go,
# the lock-client protocol) against the library at the version named with this file,
# %s.yaml@VERSION, or at go.version. Built programs are kept in ~/.cache/lockcheck/go-adapters/.
service: redis        # the lock service: redis, zookeeper, etcd, mariadb, postgres
nodes: 1
token: INCR           # the fencing token the adapter hands out, or none
go:
  source: %[2]s_adapter.go
  module: %[4]s
  version: %[5]s
`

const libraryAdapter = `//go:build ignore

// %s_adapter.go: the library behind lockcheck's lock-client protocol. lockcheck builds it with its
// protocol helper (serve, initRequest, ok, fail, unknown: adapters/_go/lockproto.go) against
// %s at the version under test. The build line keeps it out of your own module.
//
// As written it is a correct lock on go-redis (SET NX PX, an INCR fencing token, compare-and-
// delete) that only imports the library: replace the bodies of acquire, release and valid with
// your library's calls, keep the answers' shape (ok: it took effect; fail: it certainly did not;
// unknown: the outcome is not known).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	_ "%s" // the library under test: use it in place of the go-redis calls below
)

func main() { serve(newLock) }

type lock struct {
	rdb        *redis.Client
	key, value string
	ttl        time.Duration
}

func newLock(init initRequest) (lockClient, error) {
	if len(init.Nodes) == 0 {
		return nil, errors.New("no Redis node")
	}
	rdb := redis.NewClient(&redis.Options{Addr: init.Nodes[0], DialTimeout: init.timeout(),
		ReadTimeout: -1, WriteTimeout: -1, ContextTimeoutEnabled: true, MaxRetries: -1})
	return &lock{rdb: rdb, key: init.Lock, ttl: init.ttl()}, nil
}

func (l *lock) acquire(within time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	value := hex.EncodeToString(b)
	took, err := l.rdb.SetNX(ctx, l.key, value, l.ttl).Result()
	switch {
	case err != nil:
		return unknown(err)
	case !took:
		return fail("busy")
	}
	l.value = value
	token, err := l.rdb.Incr(ctx, l.key+":token").Result()
	if err != nil {
		return unknown(err)
	}
	return okToken(token)
}

var compareAndDelete = redis.NewScript(` + "`" + `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end` + "`" + `)

func (l *lock) release(within time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	n, err := compareAndDelete.Run(ctx, l.rdb, []string{l.key}, l.value).Int()
	switch {
	case err != nil:
		return unknown(err)
	case n == 0:
		return fail("not held")
	}
	return ok()
}

// valid: is the key still ours? Asked before each access to the resource.
func (l *lock) valid(within time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	v, err := l.rdb.Get(ctx, l.key).Result()
	if err != nil || v != l.value {
		return fail("the lock is not ours any more")
	}
	return ok()
}

func (l *lock) close() { _ = l.rdb.Close() }
`
