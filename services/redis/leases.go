package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
)

// Leases are the keys with a time to live whose names contain key, on every primary (a Redlock
// keeps one on each), with what is left of each.
func (ps primaries) Leases(ctx context.Context, key string) ([]services.Lease, error) {
	var out []services.Lease
	var errs []error
	for _, n := range ps.nodes {
		ls, err := keysToLive(ctx, n, key)
		out = append(out, ls...)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// Leases are the run's keys with a time to live on whichever node Sentinel names primary.
func (f *failover) Leases(ctx context.Context, key string) ([]services.Lease, error) {
	n, err := f.Primary(ctx)
	if err != nil {
		return nil, fmt.Errorf("leases of %q: %w", key, err)
	}
	return keysToLive(ctx, n, key)
}

// keysToLive are node's keys whose names contain key and that expire, with PTTL's answer.
func keysToLive(ctx context.Context, n providers.Node, key string) ([]services.Lease, error) {
	rc := redis.NewClient(directOptions(n.Addr(ClientPort))) // bounded by ctx
	defer rc.Close()
	pattern := "*" + globEscaper.Replace(key) + "*"
	iter := rc.Scan(ctx, 0, pattern, 100).Iterator()
	var out []services.Lease
	for iter.Next(ctx) {
		left, err := rc.PTTL(ctx, iter.Val()).Result()
		if err != nil {
			return out, fmt.Errorf("redis %s: pttl %s: %w", n.Name(), iter.Val(), err)
		}
		if left > 0 { // -1: no time to live; -2: gone since the scan
			out = append(out, services.Lease{Server: n.Name(), What: "key " + iter.Val(), Left: left})
		}
	}
	if err := iter.Err(); err != nil {
		return out, fmt.Errorf("redis %s: scan %s: %w", n.Name(), pattern, err)
	}
	return out, nil
}

var (
	_ services.LeaseKeeper = primaries{}
	_ services.LeaseKeeper = (*failover)(nil)
)
