//go:build !quickstart

package all

import (
	_ "github.com/lockcheck/lockcheck/services/etcd"
	_ "github.com/lockcheck/lockcheck/services/mariadb"
	_ "github.com/lockcheck/lockcheck/services/postgres"
	_ "github.com/lockcheck/lockcheck/services/zookeeper"
)
