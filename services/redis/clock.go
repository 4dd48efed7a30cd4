package redis

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ClockSkew asks the redis-server at addr for its time (TIME, which Redis reads from gettimeofday:
// libfaketime's clock for a lock node) and returns how far it is from the machine's real clock,
// taken halfway through the round trip: how tests see a clock fault land.
func ClockSkew(ctx context.Context, addr string) (time.Duration, error) {
	d := net.Dialer{Timeout: 200 * time.Millisecond}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("TIME: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	before := time.Now()
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nTIME\r\n"); err != nil {
		return 0, fmt.Errorf("TIME: %w", err)
	}
	br := bufio.NewReader(conn)
	var fields [2]int64
	line, err := br.ReadString('\n')
	if err == nil && line != "*2\r\n" {
		err = fmt.Errorf("answered %q", strings.TrimSpace(line))
	}
	for i := 0; err == nil && i < 2; i++ {
		if line, err = br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "$") {
			if err == nil {
				err = fmt.Errorf("answered %q", strings.TrimSpace(line))
			}
			break
		}
		if line, err = br.ReadString('\n'); err == nil {
			fields[i], err = strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		}
	}
	after := time.Now()
	if err != nil {
		return 0, fmt.Errorf("TIME: %w", err)
	}
	server := time.Unix(fields[0], fields[1]*1000)
	return server.Sub(before.Add(after.Sub(before) / 2).Round(0)), nil
}
