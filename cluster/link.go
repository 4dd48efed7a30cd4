package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Link is the path from one client to one server: a toxiproxy proxy listening on its own
// 127.0.0.1 port and forwarding to the server's direct address. Clients dial Addr, never the
// server itself, so every fault on the link is seen by that client only.
type Link struct {
	Client string
	Node   string // "n1".. or "resource"

	addr    string
	server  *Redis
	proxy   *toxiproxy.Proxy
	stopped *atomic.Bool // the cluster's: set by Stop

	mu  sync.Mutex
	cut bool
}

// newLink creates and starts the proxy for (client, r) and remembers its real listen address.
func (c *Cluster) newLink(client string, r *Redis) (*Link, error) {
	name := client + "->" + r.Name
	p := toxiproxy.NewProxy(c.toxi, name, "127.0.0.1:0", r.Addr)
	if err := c.toxi.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	p.Lock()
	addr := p.Listen // the real address, set by the first start
	p.Unlock()
	return &Link{Client: client, Node: r.Name, addr: addr, server: r, proxy: p, stopped: &c.stopped}, nil
}

// Addr is the 127.0.0.1:port the client dials (the proxy's listen address). It never changes.
func (l *Link) Addr() string { return l.addr }

// Upstream is the server the link forwards to.
func (l *Link) Upstream() *Redis { return l.server }

// Name is the proxy's name, "client->node".
func (l *Link) Name() string { return l.proxy.Name }

// IsCut reports whether the link is cut.
func (l *Link) IsCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut
}

// Cut stops the proxy: its listener closes (new connections are refused) and every connection
// through it is closed (the client sees a reset or EOF). Idempotent.
func (l *Link) Cut() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.proxy.Stop()
	l.cut = true
	return nil
}

// Heal starts the proxy again on the same port. If another process took the port meanwhile it
// retries for a second, then fails. Idempotent.
func (l *Link) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped.Load() {
		return fmt.Errorf("heal %s: cluster stopped", l.proxy.Name)
	}
	var err error
	for i := 0; i < 20; i++ {
		// Listen still holds the address of the first start, so the same port is bound again.
		err = l.proxy.Start()
		if err == nil || errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			l.cut = false
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("heal %s on %s: %w", l.proxy.Name, l.addr, err)
}

// AddToxic adds a toxic described in toxiproxy's JSON form, e.g.
// {"type":"latency","stream":"downstream","attributes":{"latency":200}}
// (types: latency, timeout, reset_peer, bandwidth, slow_close, slicer, limit_data; stream
// defaults to downstream, name to "<type>_<stream>").
func (l *Link) AddToxic(json string) error {
	if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(json)); err != nil {
		return fmt.Errorf("proxy %s: add toxic: %w", l.proxy.Name, err)
	}
	return nil
}

// RemoveToxic removes one toxic by name.
func (l *Link) RemoveToxic(name string) error {
	if err := l.proxy.Toxics.RemoveToxic(quietCtx(), name); err != nil {
		return fmt.Errorf("proxy %s: remove toxic %s: %w", l.proxy.Name, name, err)
	}
	return nil
}

// RemoveToxics removes every toxic from the link (data a toxic was holding flows again).
func (l *Link) RemoveToxics() error {
	l.removeToxics()
	return nil
}

func (l *Link) removeToxics() { l.proxy.Toxics.ResetToxics(quietCtx()) }

// quietCtx carries a disabled zerolog logger, which toxiproxy's toxic methods log to.
func quietCtx() context.Context {
	nop := zerolog.Nop()
	return nop.WithContext(context.Background())
}

// stopLinks heals every link (removes its toxics, which may be holding data) and stops its proxy,
// then clears toxi's proxies: the first step of a topology's Stop, after its stopped flag is set.
func stopLinks(toxi *toxiproxy.ApiServer, links []*Link) error {
	for _, l := range links {
		l.removeToxics()
		// Under the link's lock: a concurrent Heal either finished before or sees stopped.
		l.mu.Lock()
		l.proxy.Stop()
		l.cut = true
		l.mu.Unlock()
	}
	return toxi.Collection.Clear()
}
