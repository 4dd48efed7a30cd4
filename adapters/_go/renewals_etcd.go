//go:build !quickstart

package main

// renewals_etcd.go: an etcd lease's renewals, read off its client's keep-alive stream. The client
// library keeps a lease alive by sending its id on a LeaseKeepAlive stream every third of its TTL;
// the server renews the lease when a request arrives (no earlier than it was sent) and answers
// the stream's requests in order, with the lease's TTL, or a TTL of 0 when the lease is gone. A
// stream interceptor sees both, whatever the library's version: the messages are read through
// their getters, so no version's generated types are named here.
//
// The adapters of Go libraries at a version (adapters/_go) use a copy of this file: they are
// built with the standard library and the library's own modules only (a test keeps the two the
// same).

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// etcdKeepAliveMethod is the gRPC method of etcd's lease keep-alive stream.
const etcdKeepAliveMethod = "/etcdserverpb.Lease/LeaseKeepAlive"

// etcdRenewals is a stream interceptor that reports every answered keep-alive to report.
func etcdRenewals(report func(asked, answered int64, ok bool, session string, lease time.Duration)) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer,
		opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || method != etcdKeepAliveMethod {
			return s, err
		}
		return &etcdKeepAliveStream{ClientStream: s, report: report, sent: map[int64][]int64{}}, nil
	}
}

// etcdKeepAliveStream is one keep-alive stream, watched.
type etcdKeepAliveStream struct {
	grpc.ClientStream
	report func(asked, answered int64, ok bool, session string, lease time.Duration)

	mu   sync.Mutex
	sent map[int64][]int64 // when each unanswered request was sent, by lease id
}

// SendMsg notes when a keep-alive request was sent, before it goes: its sending is no earlier.
func (s *etcdKeepAliveStream) SendMsg(m any) error {
	if r, ok := m.(interface{ GetID() int64 }); ok {
		now := monotonicNow()
		s.mu.Lock()
		s.sent[r.GetID()] = append(s.sent[r.GetID()], now)
		s.mu.Unlock()
	}
	return s.ClientStream.SendMsg(m)
}

// RecvMsg reports each answer as a renewal of its lease (TTL > 0) or as its end (TTL 0).
func (s *etcdKeepAliveStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	r, ok := m.(interface {
		GetID() int64
		GetTTL() int64
	})
	if err != nil || !ok {
		return err
	}
	now := monotonicNow()
	s.mu.Lock()
	q := s.sent[r.GetID()]
	if len(q) > 0 {
		s.sent[r.GetID()] = q[1:]
	}
	s.mu.Unlock()
	if len(q) > 0 {
		s.report(q[0], now, r.GetTTL() > 0, etcdLeaseName(r.GetID()), time.Duration(r.GetTTL())*time.Second)
	}
	return nil
}

// etcdLeaseName names a lease as promises record it: "lease 694d8c3a1f2b".
func etcdLeaseName(id int64) string { return fmt.Sprintf("lease %x", id) }
