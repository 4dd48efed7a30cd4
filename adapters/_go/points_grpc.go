package main

// points_grpc.go: the program point "answered" for adapters of gRPC clients: every answer of a
// unary request made during an acquire passes it after it reached the client and before the
// library reads it. A scenario can stop the client there (a pause as the answer is on its way)
// or give the attempt up there (usage step abandon): the library then finds its context ended
// with the answer in hand, the moment etcd #10111 needs.

import (
	"context"

	"google.golang.org/grpc"
)

// answeredPoint is the point's name, as a design lists it.
const answeredPoint = "answered"

// answeredPoints is a unary interceptor that passes answeredPoint after each answer.
func answeredPoints() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker,
		opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		point(answeredPoint)
		return err
	}
}
