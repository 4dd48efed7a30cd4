package zookeeper

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/services"
)

// Leases are the sessions of every client connected to the servers, each with the timeout the
// server negotiated (a ZooKeeper lock lives on its holder's session). The servers do not say
// which znodes a session owns, so every connected session counts: during a run only its clients
// connect.
func (z *Ensemble) Leases(ctx context.Context, key string) ([]services.Lease, error) {
	var out []services.Lease
	var errs []error
	for _, name := range z.names {
		text, err := fourLetterWord(ctx, z.servers[name].Addr(ClientPort), "cons")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, sessionsIn(name, text)...)
	}
	if len(out) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// consSession is one connection of `cons`'s answer that has a session: its id and negotiated
// timeout ("...,sid=0x1000212f3cb0000,lop=PING,est=…,to=4000,...").
var consSession = regexp.MustCompile(`sid=(0x[0-9a-f]+)[^\n]*?[,(]to=([0-9]+)`)

// sessionsIn reads the sessions of server's `cons` answer.
func sessionsIn(server, text string) []services.Lease {
	var out []services.Lease
	for _, m := range consSession.FindAllStringSubmatch(text, -1) {
		ms, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil || ms <= 0 {
			continue
		}
		d := time.Duration(ms) * time.Millisecond
		out = append(out, services.Lease{Server: server, What: "session " + m[1], Granted: d, Left: d})
	}
	return out
}

var _ services.LeaseKeeper = (*Ensemble)(nil)
