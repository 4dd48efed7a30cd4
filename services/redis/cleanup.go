package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/providers"
)

// Cleanup deletes, on every primary, the keys whose names contain key: the lock's key and those
// the designs derive from it (a token counter, Redisson's hash names). key is unique to the run,
// so nothing else matches.
func (ps primaries) Cleanup(ctx context.Context, key string) error {
	var errs []error
	for _, n := range ps.nodes {
		errs = append(errs, deleteMatching(ctx, n, key))
	}
	return errors.Join(errs...)
}

// Cleanup deletes the run's keys on whichever node Sentinel names primary (replicas follow).
func (f *failover) Cleanup(ctx context.Context, key string) error {
	n, err := f.Primary(ctx)
	if err != nil {
		return fmt.Errorf("clean up %q: %w", key, err)
	}
	return deleteMatching(ctx, n, key)
}

func deleteMatching(ctx context.Context, n providers.Node, key string) error {
	rc := redis.NewClient(directOptions(n.Addr(ClientPort)))
	defer rc.Close()
	pattern := "*" + globEscaper.Replace(key) + "*"
	iter := rc.Scan(ctx, 0, pattern, 100).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("redis %s: scan %s: %w", n.Name(), pattern, err)
	}
	if len(keys) > 0 {
		if err := rc.Del(ctx, keys...).Err(); err != nil {
			return fmt.Errorf("redis %s: delete %v: %w", n.Name(), keys, err)
		}
	}
	return nil
}

var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
