package etcd

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/services"
)

// Leases are the etcd leases that keep a key whose name contains key, each with its granted TTL
// and what is left of it, as the first member that answers says.
func (c *Cluster) Leases(ctx context.Context, key string) ([]services.Lease, error) {
	var errs []error
	for _, name := range c.names {
		ls, err := leasesOn(ctx, name, c.members[name].Addr(ClientPort), key)
		if err == nil {
			return ls, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("etcd: leases of %s: %w", key, errors.Join(errs...))
}

func leasesOn(ctx context.Context, member, addr, key string) ([]services.Lease, error) {
	var list struct {
		Leases []struct {
			ID string `json:"ID"`
		} `json:"leases"`
	}
	if err := post(ctx, callTimeout, addr, "/v3/lease/leases", struct{}{}, &list); err != nil {
		return nil, err
	}
	var out []services.Lease
	for _, l := range list.Leases {
		var ttl struct {
			TTL        string   `json:"TTL"`
			GrantedTTL string   `json:"grantedTTL"`
			Keys       []string `json:"keys"`
		}
		id, err := strconv.ParseInt(l.ID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("etcd %s: lease id %q: %w", member, l.ID, err)
		}
		if err := post(ctx, callTimeout, addr, "/v3/lease/timetolive", map[string]any{"ID": id, "keys": true}, &ttl); err != nil {
			return nil, err
		}
		left, _ := strconv.ParseInt(ttl.TTL, 10, 64) // -1: gone since the list
		granted, _ := strconv.ParseInt(ttl.GrantedTTL, 10, 64)
		if left <= 0 || !keepsKeyOf(ttl.Keys, key) {
			continue
		}
		out = append(out, services.Lease{Server: member, What: fmt.Sprintf("lease %x", id),
			Granted: time.Duration(granted) * time.Second, Left: time.Duration(left) * time.Second})
	}
	return out, nil
}

// keepsKeyOf reports whether one of keys (base64, as the gateway writes them) contains key.
func keepsKeyOf(keys []string, key string) bool {
	for _, k := range keys {
		b, err := base64.StdEncoding.DecodeString(k)
		if err == nil && strings.Contains(string(b), key) {
			return true
		}
	}
	return false
}

var _ services.LeaseKeeper = (*Cluster)(nil)
