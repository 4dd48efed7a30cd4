// Package proxies puts an in-process toxiproxy proxy on every link a fault may act on: each
// client's link to each server, and (on the local provider) each path between two servers. One
// proxy per (from, to, port) makes asymmetric partitions possible: cutting client-1's link to n3
// leaves client-2's alone. A run has one Set.
package proxies

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"

	"github.com/lockcheck/lockcheck/internal/portlock"
)

// Set is every proxy of a run, on one in-process toxiproxy server.
type Set struct {
	toxi    *toxiproxy.ApiServer
	stopped atomic.Bool

	mu    sync.Mutex
	links []*Link
	byKey map[key]*Link
}

type key struct{ from, to, port string }

// New makes an empty set.
func New() *Set {
	return &Set{
		toxi:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		byKey: map[key]*Link{},
	}
}

// Link is one proxy: the path from one process (a client, or a server) to one port of a server.
// Whoever is on the from side dials Addr, never the server itself, so a fault on the link is seen
// by that side only.
type Link struct {
	From, To, Port string

	addr     string
	port     *portlock.Reservation // keeps addr ours while the link is cut
	upstream string
	proxy    *toxiproxy.Proxy
	stopped  *atomic.Bool // the set's: set by Stop

	mu  sync.Mutex
	cut bool
}

// Add creates and starts the proxy from -> to (port) forwarding to upstream. port may be empty for
// a link to a server's only port. A second Add of the same (from, to, port) is an error.
func (s *Set) Add(from, to, port, upstream string) (*Link, error) {
	if from == "" || to == "" {
		return nil, fmt.Errorf("proxies: link %q -> %q: both ends need a name", from, to)
	}
	k := key{from, to, port}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.Load() {
		return nil, errors.New("proxies: set stopped")
	}
	if s.byKey[k] != nil {
		return nil, fmt.Errorf("proxies: link %s already exists", name(k))
	}
	res, err := portlock.Fresh()
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name(k), err)
	}
	p := toxiproxy.NewProxy(s.toxi, name(k), res.Addr(), upstream)
	if err := s.toxi.Collection.Add(p, true); err != nil {
		res.Close()
		return nil, fmt.Errorf("proxy %s: %w", name(k), err)
	}
	l := &Link{From: from, To: to, Port: port, addr: res.Addr(), port: res, upstream: upstream, proxy: p, stopped: &s.stopped}
	s.links = append(s.links, l)
	s.byKey[k] = l
	return l, nil
}

// AddLink is Add returning only the address (providers.LinkAdder).
func (s *Set) AddLink(from, to, port, upstream string) (string, error) {
	l, err := s.Add(from, to, port, upstream)
	if err != nil {
		return "", err
	}
	return l.Addr(), nil
}

func name(k key) string {
	n := k.from + "->" + k.to
	if k.port != "" {
		n += " " + k.port
	}
	return n
}

// Link returns the proxy from -> to (port), or nil.
func (s *Set) Link(from, to, port string) *Link {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[key{from, to, port}]
}

// From returns every link whose from side is from, in the order they were added.
func (s *Set) From(from string) []*Link {
	return s.filter(func(l *Link) bool { return l.From == from })
}

// Between returns every link between a and b, both directions.
func (s *Set) Between(a, b string) []*Link {
	return s.filter(func(l *Link) bool { return (l.From == a && l.To == b) || (l.From == b && l.To == a) })
}

// All returns every link, in the order they were added.
func (s *Set) All() []*Link { return s.filter(func(*Link) bool { return true }) }

func (s *Set) filter(keep func(*Link) bool) []*Link {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Link
	for _, l := range s.links {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}

// Peers returns the names linked with a (either direction), sorted.
func (s *Set) Peers(a string) []string {
	seen := map[string]bool{}
	for _, l := range s.All() {
		switch a {
		case l.From:
			seen[l.To] = true
		case l.To:
			seen[l.From] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CutBetween cuts every link between a and b, both ways.
func (s *Set) CutBetween(a, b string) error {
	links := s.Between(a, b)
	if len(links) == 0 {
		return fmt.Errorf("proxies: no link between %s and %s", a, b)
	}
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Cut())
	}
	return errors.Join(errs...)
}

// DropBetween drops every link between a and b, both ways (Link.Drop).
func (s *Set) DropBetween(a, b string) error {
	links := s.Between(a, b)
	if len(links) == 0 {
		return fmt.Errorf("proxies: no link between %s and %s", a, b)
	}
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Drop())
	}
	return errors.Join(errs...)
}

// HealBetween heals every link between a and b and removes their toxics.
func (s *Set) HealBetween(a, b string) error {
	var errs []error
	for _, l := range s.Between(a, b) {
		errs = append(errs, l.RemoveToxics(), l.Heal())
	}
	return errors.Join(errs...)
}

// Stop heals every link (removes its toxics, which may be holding data), stops every proxy and
// the set. Later Adds and Heals fail. Idempotent.
func (s *Set) Stop() error {
	s.mu.Lock()
	s.stopped.Store(true)
	links := append([]*Link(nil), s.links...)
	s.mu.Unlock()
	for _, l := range links {
		l.removeToxics()
		// Under the link's lock: a concurrent Heal either finished before or sees stopped.
		l.mu.Lock()
		l.proxy.Stop()
		l.cut = true
		l.port.Close()
		l.mu.Unlock()
	}
	return s.toxi.Collection.Clear()
}

// Addr is the 127.0.0.1:port the from side dials (the proxy's listen address). It never changes.
func (l *Link) Addr() string { return l.addr }

// Upstream is the address the link forwards to.
func (l *Link) Upstream() string { return l.upstream }

// Name is the proxy's name, "from->to" or "from->to port".
func (l *Link) Name() string { return l.proxy.Name }

// IsCut reports whether the link is cut.
func (l *Link) IsCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut
}

// Cut stops the proxy: its listener closes (new connections are refused) and every connection
// through it is closed (the from side sees a reset or EOF). The port stays reserved for the link,
// so no outgoing connection takes it as its local port meanwhile and Heal can always bind it.
// Idempotent.
func (l *Link) Cut() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.proxy.Stop()
	l.cut = true
	return nil
}

// Heal starts the proxy again on the same port (reserved since Add, so it is free; the retries
// only cover the proxy's own restart). Idempotent.
func (l *Link) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped.Load() {
		return fmt.Errorf("heal %s: proxies stopped", l.proxy.Name)
	}
	var err error
	for i := 0; i < 20; i++ {
		err = l.proxy.Start()
		if err == nil || errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			l.cut = false
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("heal %s on %s: %w", l.proxy.Name, l.addr, err)
}

// Drop makes the link a black hole both ways, as a partition that drops packets does (iptables
// DROP): connections stay open and nothing gets through, so a read waits for its own deadline
// instead of failing at once. New connections are accepted (the proxy accepts before it dials)
// and get nothing through either. What is sent meanwhile is held, in order and with any close,
// and delivered when Heal removes the toxics: what TCP's retransmissions deliver once a dropped
// path is back, if the connection has not been given up by then. Idempotent.
func (l *Link) Drop() error {
	for _, stream := range []string{"upstream", "downstream"} {
		if l.proxy.Toxics.GetToxic(holdName+"_"+stream) != nil {
			continue
		}
		if err := l.AddToxic(fmt.Sprintf(`{"name":"%s_%s","type":"%s","stream":"%s","toxicity":1}`, holdName, stream, holdName, stream)); err != nil {
			return err
		}
	}
	return nil
}

// IsDropped reports whether the link drops (Drop, until its toxics are removed).
func (l *Link) IsDropped() bool { return l.proxy.Toxics.GetToxic(holdName+"_upstream") != nil }

// holdName is the toxic Drop adds, one per direction.
const holdName = "lockcheck_hold"

// holdToxic holds everything: it never reads its input, so data (and an end of stream) wait in
// order, then the proxy's own buffers, then the sender's socket buffers, as behind a path that
// drops packets. Toxiproxy's own toxics do not fit: timeout with 0 discards the bytes (the stream
// resumes with a gap no TCP connection has) and closes the connection when removed; latency
// passes an end of stream on at once.
type holdToxic struct{}

// Pipe waits until the toxic is interrupted (removed, or another toxic added); removal passes on
// what is queued.
func (holdToxic) Pipe(stub *toxics.ToxicStub) { <-stub.Interrupt }

func init() { toxics.Register(holdName, new(holdToxic)) }

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
