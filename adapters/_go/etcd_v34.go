package main

// etcd_v34.go: the names etcd_mutex.go uses, in the layout of etcd 3.4 and earlier, whose
// client lives in the module go.etcd.io/etcd (on the module proxy as pseudo-versions: the
// release tags of that module are refused there).

import (
	clientv3 "go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	pb "go.etcd.io/etcd/etcdserver/etcdserverpb"
	"go.uber.org/zap"
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

// createRevision is the create revision of the key m holds: the value m.IsOwner() compares with.
func createRevision(m *etcdMutex) int64 {
	c := pb.Compare(m.IsOwner())
	return c.TargetUnion.(*pb.Compare_CreateRevision).CreateRevision
}

// sessionExpired: before 3.5, Lock never says that the waiter's session expired.
func sessionExpired(error) bool { return false }

// etcdClientConfig is the client's configuration: the library's warnings and errors only, on
// stderr.
func etcdClientConfig(endpoints []string, dial []grpc.DialOption) etcdConfig {
	logs := zap.NewProductionConfig()
	logs.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	logs.Sampling = nil
	logs.OutputPaths, logs.ErrorOutputPaths = []string{"stderr"}, []string{"stderr"}
	return etcdConfig{Endpoints: endpoints, LogConfig: &logs, DialOptions: dial}
}
