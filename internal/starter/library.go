package starter

// Library adapters: a Go adapter of a library lockcheck does not ship, one template per lock
// service (templates/golib-SERVICE/adapter.go.tmpl), each a correct lock on that service that
// only imports the library, for the user to replace with the library's calls.

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/services"
)

// LibraryKit is what a library adapter's template on one service gives its design file.
type LibraryKit struct {
	Service string
	Nodes   int    // how many servers its design asks for
	Token   string // the fencing token its adapter hands out, as a design file names it
	Lock    string // what the template's lock is, in a few words
	// Unleased: the lock has no lease of its own; it lives as long as its connection (a design
	// file's expires: false and connection: true).
	Unleased bool
}

// Faults are the matrix columns init suggests first: for a lock on a lease, a holder frozen past
// it; for a lock held as long as its connection, which no pause ends, the holder's death too.
func (k LibraryKit) Faults() string {
	if k.Unleased {
		return "none,pause-after-acquire,kill-holder"
	}
	return "none,pause-after-acquire,pause-before-write"
}

// LibraryKits are the templates by service, in the order errors list them.
var LibraryKits = []LibraryKit{
	{Service: locks.Redis, Nodes: 1, Token: "INCR", Lock: "SET NX PX, an INCR fencing token, compare-and-delete (go-redis)"},
	{Service: locks.ZooKeeper, Nodes: 1, Token: "czxid of the lock node", Lock: "an ephemeral node, its czxid the fencing token (go-zookeeper/zk)"},
	{Service: "etcd", Nodes: 1, Token: "create revision of the key", Lock: "a key put if absent on a lease, its create revision the fencing token (etcd's client)"},
	{Service: "mariadb", Nodes: 1, Token: "none", Lock: "GET_LOCK on a connection of its own (go-sql-driver/mysql)", Unleased: true},
	{Service: "postgres", Nodes: 1, Token: "none", Lock: "a session advisory lock on a connection of its own (pgx)", Unleased: true},
}

// LibraryKitFor is the template for service ("" for Redis's), or an error listing the services.
func LibraryKitFor(service string) (LibraryKit, error) {
	if service == "" {
		service = locks.Redis
	}
	i := slices.IndexFunc(LibraryKits, func(k LibraryKit) bool { return k.Service == service })
	if i < 0 {
		var have []string
		for _, k := range LibraryKits {
			have = append(have, k.Service)
		}
		if !slices.Contains(services.Names(), service) {
			return LibraryKit{}, fmt.Errorf("--service %q: not a lock service lockcheck runs; valid services: %s", service, strings.Join(have, ", "))
		}
		return LibraryKit{}, fmt.Errorf("--service %q: no library template for it; templates: %s", service, strings.Join(have, ", "))
	}
	return LibraryKits[i], nil
}

// DesignLines are the design file's lines for the template's lock beyond service, nodes and token.
func (k LibraryKit) DesignLines() string {
	if k.Unleased {
		return "expires: false        # no lease: held until released or its connection ends\n" +
			"connection: true      # a hold lasts only while its connection does\n"
	}
	lease := "lease"
	if k.Service == locks.ZooKeeper {
		lease = "session"
	}
	return fmt.Sprintf("expires: true         # a %s ends a hold its client does not renew (the run's TTL)\n"+
		"connection: false     # a hold outlives a broken connection while its %s lasts\n", lease, lease)
}

// Adapter is the template's adapter for the library module, whose design is named name.
func (k LibraryKit) Adapter(name, module string) ([]byte, error) {
	text, err := templates.ReadFile(path.Join("templates", "golib-"+k.Service, "adapter.go.tmpl"))
	if err != nil {
		return nil, err
	}
	return []byte(strings.NewReplacer("{{NAME}}", name, "{{MODULE}}", module).Replace(string(text))), nil
}
