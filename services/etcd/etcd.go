// Package etcd is the etcd lock service: one member or a cluster of them (Debian's etcd-server,
// 3.4), each member a server the provider runs, with its data folder in the run folder. Clients
// reach each member through their own links; members reach each other along paths the provider
// can cut (Placement.Peer), so a scenario can isolate a member, or the leader, from the others.
//
// etcd names every member by one set of peer URLs, the same for all members (a member's id is a
// hash of them), while a provider that puts a proxy on each path (local) gives each member its
// own address for the same peer. doorways.go reconciles the two: see there.
package etcd

import (
	"math"
	"time"

	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
)

// Kind is the etcd lock service.
type Kind struct{}

func init() { services.Register(Kind{}) }

// Name is "etcd": what etcd lock designs name as their Service.
func (Kind) Name() string { return locks.Etcd }

// QuorumSize: deployments run three (services.Quorum).
func (Kind) QuorumSize() int { return 3 }

// Ports by name, and their numbers in a container.
const (
	ClientPort = "client"
	PeerPort   = "peer"
)

const (
	// DefaultElectionTimeout and DefaultHeartbeat are etcd's own defaults: a scenario that says
	// nothing runs etcd as most people do.
	DefaultElectionTimeout = time.Second
	DefaultHeartbeat       = 100 * time.Millisecond
	// maxElectionTimeout is etcd's own upper bound.
	maxElectionTimeout = 50 * time.Second
	// maxMembers keeps a cluster to what one machine runs comfortably.
	maxMembers = 7
)

// Leader names whichever member leads when a fault strikes.
const Leader = "leader"

// noClock: etcd is a Go program. Go reads the time through the vDSO, not libc, so libfaketime
// never sees the calls; and the lessor measures lease expiry on the monotonic clock, which a wall
// clock step would not move anyway.
const noClock = "etcd is a Go program: it reads the clock through the vDSO, which libfaketime cannot intercept, " +
	"and times leases on the monotonic clock; skew a client's clock instead"

// Settings are the scenario's `server:` block for etcd.
type Settings struct {
	// ElectionTimeout is how long a follower waits without hearing from a leader before it calls
	// an election (etcd's --election-timeout, default 1s, whole milliseconds).
	ElectionTimeout yamltime.Duration `yaml:"election_timeout"`
	// Heartbeat is how often a leader tells followers it is alive (--heartbeat-interval, default
	// 100ms, whole milliseconds).
	Heartbeat yamltime.Duration `yaml:"heartbeat"`
	// Version is the etcd version members run (version.go): "" for the etcd on PATH (Debian's
	// etcd-server), else one lockcheck builds from the Go module proxy ("3.4.3", "3.5.21").
	Version string `yaml:"version"`
}

// MinLeaseTTL is the shortest lease etcd grants with these timings: 1.5 election timeouts,
// counted in whole heartbeats and rounded up to a second (etcd's lessor raises any shorter TTL to
// it without a word, so a scenario asking for less would not get what it says).
func (s Settings) MinLeaseTTL() time.Duration {
	ticks := int64(s.ElectionTimeout.D() / s.Heartbeat.D())
	min := time.Duration(3*ticks/2) * s.Heartbeat.D()
	return time.Duration(math.Ceil(min.Seconds())) * time.Second
}

// ScaledServer keeps etcd's failover the sliver of a lease it is in a deployment, where a 1 s
// election timeout sits against a session's 60 s TTL. Against the 2 s leases of short runs, etcd's
// own timings leave a cluster without a leader for 1–2 s after the leader crashes (an election
// waits a random 1–2 election timeouts), keep-alives wait with it, and whether a holder's lease
// outlived that was chance: the matrix's crash cells varied run to run. An election timeout of an
// eighth of the lease, heartbeats a tenth of that, ends the wait well inside the lease.
func (Kind) ScaledServer(ttl time.Duration) map[string]string {
	election := (ttl / 8).Round(time.Millisecond)
	heartbeat := (election / 10).Round(time.Millisecond)
	return map[string]string{"election_timeout": election.String(), "heartbeat": heartbeat.String()}
}

// detail is what Plan hands Start.
type detail struct {
	settings Settings
}

// Plan lays out members n1..nN and the leader role, and checks the scenario's timings.
func (Kind) Plan(s services.Spec, bad services.Report) *services.Plan {
	set := Settings{ElectionTimeout: yamltime.Duration(DefaultElectionTimeout), Heartbeat: yamltime.Duration(DefaultHeartbeat)}
	services.DecodeServer(s, &set, bad)
	set = checkTimings(set, bad)
	checkVersion(set.Version, bad)
	if s.Nodes < 1 || s.Nodes > maxMembers {
		bad("nodes", "an etcd cluster has 1..%d members, got %d", maxMembers, s.Nodes)
		return nil
	}
	minTTL := set.MinLeaseTTL()
	switch {
	case s.TTL == 0:
	case s.TTL%time.Second != 0:
		bad("ttl", "etcd leases last whole seconds; %s is not a whole number of seconds", s.TTL)
	case s.TTL < minTTL:
		bad("ttl", "etcd grants no lease shorter than 1.5 election timeouts rounded up to a second: %s with "+
			"server.election_timeout %s and server.heartbeat %s, so a ttl of %s would silently become %s; "+
			"raise ttl or lower server.election_timeout", minTTL, set.ElectionTimeout.D(), set.Heartbeat.D(), s.TTL, minTTL)
	}
	members := services.NodeNames("n", s.Nodes)
	p := &services.Plan{Nodes: members, Servers: members, MinTTL: minTTL, Detail: detail{settings: set}}
	for _, n := range members {
		var peers []string
		for _, o := range members {
			if o != n {
				peers = append(peers, o)
			}
		}
		p.Targets = append(p.Targets, nemesis.TargetInfo{Name: n, Restart: true, NoClock: noClock, Peers: peers})
	}
	// The leader can be cut from the others like any member: from whichever member leads when the
	// partition starts.
	var leaderPeers []string
	if len(members) > 1 {
		leaderPeers = members
	}
	p.Targets = append(p.Targets, nemesis.TargetInfo{Name: Leader, Role: "whichever member leads when the fault starts",
		Restart: true, NoClock: noClock, Peers: leaderPeers})
	return p
}

// checkTimings reports timings etcd itself would refuse, and returns usable ones.
func checkTimings(set Settings, bad services.Report) Settings {
	e, h := set.ElectionTimeout.D(), set.Heartbeat.D()
	ok := true
	if h < time.Millisecond || h%time.Millisecond != 0 {
		bad("server.heartbeat", "%v is not a whole, positive number of milliseconds", h)
		ok = false
	}
	if e < time.Millisecond || e%time.Millisecond != 0 {
		bad("server.election_timeout", "%v is not a whole, positive number of milliseconds", e)
		ok = false
	}
	if ok && e < 5*h {
		bad("server.election_timeout", "etcd wants it at least 5 heartbeats (%s with server.heartbeat %s); got %s", 5*h, h, e)
		ok = false
	}
	if ok && e > maxElectionTimeout {
		bad("server.election_timeout", "etcd allows at most %s; got %s", maxElectionTimeout, e)
		ok = false
	}
	if !ok {
		return Settings{ElectionTimeout: yamltime.Duration(DefaultElectionTimeout), Heartbeat: yamltime.Duration(DefaultHeartbeat), Version: set.Version}
	}
	return set
}

// needs is what a member needs on a machine that runs it directly: Debian's etcd, unless it runs
// a version built into the cache (which exists by then).
func needs(builtVersion bool) []providers.Need {
	out := []providers.Need{{Path: "env", Package: "coreutils"}} // env -C: the member's working folder holds its doorways
	if !builtVersion {
		out = append(out, providers.Need{Path: "etcd", Package: "etcd-server"})
	}
	return out
}
