package locks

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A Lock ended by our own deadline is a waiter giving up, whichever side said so first: the
// client's gRPC, or the server's answer with the context's words (a CI run under load got the
// latter, and the test above read it as a failure).
func TestALockRPCEndedByOurDeadlineIsGivingUp(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), true},
		{status.Error(codes.Canceled, "context canceled"), true},
		{status.Error(codes.Unknown, "context deadline exceeded"), true},
		{status.Error(codes.Unknown, "context canceled"), true},
		{status.Error(codes.Unknown, "mutex: session is expired"), false},
		{status.Error(codes.Unavailable, "connection refused"), false},
		{context.DeadlineExceeded, true}, // the context's own error, unwrapped
	} {
		if got := gaveUpWaiting(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}
