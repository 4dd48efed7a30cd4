// Package redisopt holds the go-redis settings lockcheck's own clients use, chosen deliberately
// and written down here because they change what a run shows:
//
//   - no command retries and one dial attempt: a retried SET NX after a lost reply reports "busy"
//     for a lock this client just took, a retried write could apply twice, and hidden retries
//     stretch an operation past its budget;
//   - no socket timeouts; every command is bounded by its context instead. go-redis (v9.15+)
//     computes socket deadlines from a clock it caches every 50 ms; after a SIGSTOP that cache
//     is stale, and the first command after resuming fails with an i/o timeout before it is even
//     sent. Context deadlines are taken from the real clock when the command is issued.
//   - one connection: a client does one thing at a time.
package redisopt

import (
	"context"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options returns client options for addr; dialTimeout bounds connecting.
func Options(addr string, dialTimeout time.Duration) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		Protocol:              2,
		DisableIdentity:       true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           dialTimeout,
		ReadTimeout:           -1,
		WriteTimeout:          -1,
		ContextTimeoutEnabled: true,
		PoolSize:              1,
		PoolTimeout:           dialTimeout,
	}
}

// FailoverOptions are Options for a client that follows Redis Sentinel to the current primary of
// master: the same no-retry, context-bounded settings, for the data connection and for the
// sentinel connections alike. dialer reaches an address a sentinel names (nil: directly).
func FailoverOptions(master string, sentinels []string, dialTimeout time.Duration,
	dialer func(ctx context.Context, network, addr string) (net.Conn, error)) *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:            master,
		SentinelAddrs:         sentinels,
		Dialer:                dialer,
		Protocol:              2,
		DisableIdentity:       true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           dialTimeout,
		ReadTimeout:           -1,
		WriteTimeout:          -1,
		ContextTimeoutEnabled: true,
		PoolSize:              1,
		PoolTimeout:           dialTimeout,
	}
}
