// Package all registers every kind of lock service and every provider: import it (for its side
// effects) where scenarios are loaded or run. Adding a service or a provider is one line here.
package all

import (
	_ "github.com/lockcheck/lockcheck/providers/docker"
	_ "github.com/lockcheck/lockcheck/providers/external"
	_ "github.com/lockcheck/lockcheck/providers/local"
	_ "github.com/lockcheck/lockcheck/services/etcd"
	_ "github.com/lockcheck/lockcheck/services/mariadb"
	_ "github.com/lockcheck/lockcheck/services/postgres"
	_ "github.com/lockcheck/lockcheck/services/redis"
	_ "github.com/lockcheck/lockcheck/services/zookeeper"
)
