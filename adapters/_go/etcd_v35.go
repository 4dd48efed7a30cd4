package main

// etcd_v35.go: the names etcd_mutex.go uses, in the layout of etcd 3.5 and later, whose client
// is the module go.etcd.io/etcd/client/v3.

import (
	"errors"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
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

// createRevision is the create revision of the key m holds: the value m.IsOwner() compares with.
func createRevision(m *etcdMutex) int64 {
	c := pb.Compare(m.IsOwner())
	return c.TargetUnion.(*pb.Compare_CreateRevision).CreateRevision
}

// sessionExpired: from 3.5.0, Lock reads its key back after waiting and fails with
// ErrSessionExpired when it is gone.
func sessionExpired(err error) bool { return errors.Is(err, concurrency.ErrSessionExpired) }

// etcdClientConfig is the client's configuration: the library's warnings and errors only, on
// stderr.
func etcdClientConfig(endpoints []string, dial []grpc.DialOption) etcdConfig {
	logs := zap.NewProductionConfig()
	logs.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	logs.Sampling = nil
	logs.OutputPaths, logs.ErrorOutputPaths = []string{"stderr"}, []string{"stderr"}
	return etcdConfig{Endpoints: endpoints, LogConfig: &logs, DialOptions: dial}
}
