package main

// etcd_v33.go: the names etcd_mutex.go uses, in the layout of etcd 3.3 and earlier, whose client
// lives in the module github.com/coreos/etcd (served by the module proxy as vX.Y.Z+incompatible).
// Its client logs through grpclog and capnslog, to stderr: it has no logger to configure. It
// builds only against the gRPC of its day (golib.go pins google.golang.org/grpc v1.26.0: later
// releases dropped the grpc/naming package it imports).

import (
	clientv3 "github.com/coreos/etcd/clientv3"
	"github.com/coreos/etcd/clientv3/concurrency"
	pb "github.com/coreos/etcd/etcdserver/etcdserverpb"
	"google.golang.org/grpc"
)

type (
	etcdClient  = clientv3.Client
	etcdConfig  = clientv3.Config
	etcdSession = concurrency.Session
	etcdMutex   = concurrency.Mutex
)

var (
	etcdNew        = clientv3.New
	etcdNewSession = concurrency.NewSession
	etcdWithTTL    = concurrency.WithTTL
	etcdNewMutex   = concurrency.NewMutex
)

// etcdClientConfig is the client's configuration.
func etcdClientConfig(endpoints []string, dial []grpc.DialOption) etcdConfig {
	return etcdConfig{Endpoints: endpoints, DialOptions: dial}
}

// createRevision is the create revision of the key m holds: the value m.IsOwner() compares with.
func createRevision(m *etcdMutex) int64 {
	c := pb.Compare(m.IsOwner())
	return c.TargetUnion.(*pb.Compare_CreateRevision).CreateRevision
}

// sessionExpired: before 3.5, Lock never says that the waiter's session expired.
func sessionExpired(error) bool { return false }
