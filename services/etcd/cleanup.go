package etcd

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/services"
)

// Cleanup deletes every key the etcd designs kept for key (their lock keys carry leases and go
// with them anyway; a lease outlives its holder by its TTL). It asks each member in turn until one
// does it.
func (c *Cluster) Cleanup(ctx context.Context, key string) error {
	prefix := locks.EtcdLockPrefix(key)
	end := []byte(prefix)
	end[len(end)-1]++ // the first key past the prefix
	body := map[string]string{
		"key":       base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end": base64.StdEncoding.EncodeToString(end),
	}
	var errs []error
	for _, name := range c.names {
		err := post(ctx, moveTimeout, c.members[name].Addr(ClientPort), "/v3/kv/deleterange", body, nil)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("etcd: clean up %s: %w", prefix, errors.Join(errs...))
}

var _ services.Cleaner = (*Cluster)(nil)
