// Package all registers every kind of lock service: import it (for its side effects) in a program
// that loads or runs scenarios. It registers no provider (package providers/all does): a program
// picks where servers may run, and only one that offers Docker links its client.
package all

import (
	_ "github.com/lockcheck/lockcheck/services/etcd"
	_ "github.com/lockcheck/lockcheck/services/mariadb"
	_ "github.com/lockcheck/lockcheck/services/postgres"
	_ "github.com/lockcheck/lockcheck/services/redis"
	_ "github.com/lockcheck/lockcheck/services/zookeeper"
)
