package locks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
)

// SentinelEnv is set when the lock's Redis is a primary with replicas under Redis Sentinel: a
// single-node design then follows Sentinel to whichever node is primary.
type SentinelEnv struct {
	Master string   `json:"master"` // the name the sentinels monitor the primary under
	Addrs  []string `json:"addrs"`  // the sentinels' real addresses
	// Dial maps each real address a sentinel may name (sentinels, data nodes) to this client's
	// proxy for it. Sentinel reports real addresses; dialing them directly would bypass the
	// proxies the nemesis cuts, so any address missing here is refused.
	Dial map[string]string `json:"dial"`
}

// dialRedis connects to one lock node with lockcheck's deliberate go-redis settings (no retries,
// context-bounded commands: see internal/redisopt). Callers bound each command with a context.
// With env.Sentinel the client follows Sentinel instead, and addr is not used.
func dialRedis(addr string, env Env) *redis.Client {
	return newRedisClient(redisopt.Options(addr, env.Timeout), env)
}

// newRedisClient builds a client from o: a plain one, or with env.Sentinel one that follows
// Sentinel to the current primary with o's settings, its dialer (if any) still making every
// connection, to the proxy of the address a sentinel named.
func newRedisClient(o *redis.Options, env Env) *redis.Client {
	if env.Sentinel == nil {
		return redis.NewClient(o)
	}
	return redis.NewFailoverClient(failoverOptions(o, env.Sentinel))
}

func failoverOptions(o *redis.Options, s *SentinelEnv) *redis.FailoverOptions {
	dial := o.Dialer
	if dial == nil {
		timeout := o.DialTimeout
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: timeout, KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second}}
			return d.DialContext(ctx, network, addr)
		}
	}
	proxied := func(ctx context.Context, network, addr string) (net.Conn, error) {
		proxy, ok := s.Dial[addr]
		if !ok {
			return nil, fmt.Errorf("sentinel named %s, which this client has no proxy for", addr)
		}
		return dial(ctx, network, proxy)
	}
	f := redisopt.FailoverOptions(s.Master, s.Addrs, o.DialTimeout, proxied)
	f.Protocol, f.DisableIdentity = o.Protocol, o.DisableIdentity
	f.MaxRetries, f.DialerRetries = o.MaxRetries, o.DialerRetries
	f.ReadTimeout, f.WriteTimeout, f.ContextTimeoutEnabled = o.ReadTimeout, o.WriteTimeout, o.ContextTimeoutEnabled
	f.PoolSize, f.PoolTimeout = o.PoolSize, o.PoolTimeout
	return f
}

// randomValue is a lock value no other client can guess or collide with: 20 random bytes, as the
// Redis docs recommend for SET NX PX.
func randomValue() string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b)
}
