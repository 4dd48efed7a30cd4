package zookeeper

import (
	"bytes"
	byteorder "encoding/binary"
	"io"
	"testing"
)

// hello is a connecting server's first election message as QuorumCnxManager writes it: protocol
// version, server id, then the length and text of its own election address.
func hello(version, sid int64, addr string) []byte {
	b := byteorder.BigEndian.AppendUint64(nil, uint64(version))
	b = byteorder.BigEndian.AppendUint64(b, uint64(sid))
	b = byteorder.BigEndian.AppendUint32(b, uint32(len(addr)))
	return append(b, addr...)
}

func TestElectionHelloAnnouncesTheCallbackPath(t *testing.T) {
	for _, v := range []int64{electionProtocolV1, electionProtocolV2} {
		after := []byte("the vote that follows")
		r := bytes.NewReader(append(hello(v, 2, "127.0.0.1:1111"), after...))
		got, err := rewriteElectionHello(r, "127.0.0.1:2222")
		if err != nil {
			t.Fatal(err)
		}
		if want := hello(v, 2, "127.0.0.1:2222"); !bytes.Equal(got, want) {
			t.Errorf("version %d: rewritten to %q, want %q", v, got, want)
		}
		// Only the first message is read: what follows stays for the copy.
		if rest, _ := io.ReadAll(r); !bytes.Equal(rest, after) {
			t.Errorf("version %d: left %q unread, want %q", v, rest, after)
		}
	}
}

func TestElectionHelloLeavesOtherMessagesAlone(t *testing.T) {
	// Without a call-back path the announced address stays.
	msg := hello(electionProtocolV2, 3, "127.0.0.1:1111")
	if got, err := rewriteElectionHello(bytes.NewReader(msg), ""); err != nil || !bytes.Equal(got, msg) {
		t.Errorf("no call-back: %q, %v; want the message as read", got, err)
	}
	// An old-style first message is just the sender's id: nothing to rewrite, nothing more read.
	old := byteorder.BigEndian.AppendUint64(nil, 3)
	r := bytes.NewReader(append(old, "more"...))
	if got, err := rewriteElectionHello(r, "127.0.0.1:2222"); err != nil || !bytes.Equal(got, old) {
		t.Errorf("old-style message: %q, %v", got, err)
	}
	if r.Len() != len("more") {
		t.Errorf("an old-style message read %d bytes too many", len("more")-r.Len())
	}
	// A length ZooKeeper itself rejects is passed on for it to reject.
	v2 := int64(electionProtocolV2)
	bad := byteorder.BigEndian.AppendUint64(nil, uint64(v2))
	bad = byteorder.BigEndian.AppendUint64(bad, 3)
	bad = byteorder.BigEndian.AppendUint32(bad, maxInitialAddr+1)
	if got, err := rewriteElectionHello(bytes.NewReader(bad), "127.0.0.1:2222"); err != nil || !bytes.Equal(got, bad) {
		t.Errorf("oversized address: %q, %v", got, err)
	}
	// A message cut short is an error, not a half-rewritten message.
	if _, err := rewriteElectionHello(bytes.NewReader(msg[:len(msg)-3]), "127.0.0.1:2222"); err == nil {
		t.Error("a truncated message was rewritten")
	}
}
