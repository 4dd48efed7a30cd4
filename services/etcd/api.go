package etcd

// The harness's own questions to members, over etcd's JSON gateway on the client port (plain
// HTTP: no connection state to carry across a member's crash and restart, every call bounded by
// its context).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

var httpClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// memberStatus is what a member says about itself.
type memberStatus struct {
	ID     uint64 // the member's id
	Leader uint64 // the leader it follows (itself if it leads); 0: none known
	Term   uint64 // its raft term
}

// leads reports whether the member says it leads.
func (s memberStatus) leads() bool { return s.Leader != 0 && s.Leader == s.ID }

// callTimeout bounds one question to one member (a paused member never answers).
const callTimeout = 500 * time.Millisecond

// moveTimeout bounds a leadership transfer: the new leader must catch up and win an election.
const moveTimeout = 5 * time.Second

// post sends body to path on the member's client port and decodes the answer into out, within
// timeout.
func post(ctx context.Context, timeout time.Duration, addr, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s%s: %s: %s", addr, path, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// status asks the member at addr for its status.
func status(ctx context.Context, addr string) (memberStatus, error) {
	var r struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader   string `json:"leader"`
		RaftTerm string `json:"raftTerm"`
	}
	if err := post(ctx, callTimeout, addr, "/v3/maintenance/status", struct{}{}, &r); err != nil {
		return memberStatus{}, err
	}
	var s memberStatus
	var err error
	if s.ID, err = parseID(r.Header.MemberID); err != nil {
		return s, fmt.Errorf("etcd %s: member id: %w", addr, err)
	}
	if s.Leader, err = parseID(r.Leader); err != nil {
		return s, fmt.Errorf("etcd %s: leader: %w", addr, err)
	}
	s.Term, _ = parseID(r.RaftTerm)
	return s, nil
}

// parseID reads a uint64 the gateway writes as a decimal string ("" for zero).
func parseID(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// linearizableRead reads a key through the member at addr, as a client would: it succeeds only
// when the member is part of a quorum with a leader (the read goes through raft's read index).
func linearizableRead(ctx context.Context, addr string) error {
	return post(ctx, callTimeout, addr, "/v3/kv/range", map[string]string{"key": "bG9ja2NoZWNr"}, nil) // "lockcheck"
}

// moveLeader asks the leader at addr to hand leadership to member id.
func moveLeader(ctx context.Context, addr string, id uint64) error {
	return post(ctx, moveTimeout, addr, "/v3/maintenance/transfer-leadership", map[string]string{"targetID": strconv.FormatUint(id, 10)}, nil)
}

// version asks the member at addr for its version: it answers as soon as it serves clients at
// all, before the cluster has a leader.
func version(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/version", nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s/version: %s", addr, resp.Status)
	}
	return nil
}
