package locks

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
)

// dialRedis connects to one lock node with lockcheck's deliberate go-redis settings (no retries,
// context-bounded commands: see internal/redisopt). Callers bound each command with a context.
func dialRedis(addr string, env Env) *redis.Client {
	return redis.NewClient(redisopt.Options(addr, env.Timeout))
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
