package zookeeper

// ZooKeeper's election handshake (QuorumCnxManager): a connecting server first sends a protocol
// version, its id, and (for these versions) the length and text of its own election address.

import (
	byteorder "encoding/binary"
	"io"
)

const (
	electionProtocolV1 = -65536
	electionProtocolV2 = -65535
	maxInitialAddr     = 4096
)

// rewriteElectionHello reads a connecting server's first election message from r and returns it
// with callback in place of the address it announces (or as read, if it is not one it knows).
func rewriteElectionHello(r io.Reader, callback string) ([]byte, error) {
	head := make([]byte, 8, 64)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, err
	}
	v := int64(byteorder.BigEndian.Uint64(head))
	if v != electionProtocolV1 && v != electionProtocolV2 {
		return head, nil // an old-style first message (just the id) carries no address
	}
	rest := make([]byte, 12) // sid, address length
	if _, err := io.ReadFull(r, rest); err != nil {
		return nil, err
	}
	n := int32(byteorder.BigEndian.Uint32(rest[8:]))
	if n <= 0 || n > maxInitialAddr {
		return append(head, rest...), nil // ZooKeeper rejects it itself
	}
	addr := make([]byte, n)
	if _, err := io.ReadFull(r, addr); err != nil {
		return nil, err
	}
	if callback == "" {
		callback = string(addr)
	}
	out := append(head, rest[:8]...)
	out = byteorder.BigEndian.AppendUint32(out, uint32(len(callback)))
	return append(out, callback...), nil
}
