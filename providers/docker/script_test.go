package docker

import (
	"net/netip"
	"strings"
	"testing"
)

// The start script quotes every argument and value, runs the server in place of the shell (so the
// exec'd pid is the server's), and drops to the asked user after giving it the folder.
func TestStartScript(t *testing.T) {
	s := startScriptText("n1", []string{"postgres", "-c", "x='y z'"}, []string{"A=b c"}, "postgres", "/node/pg.log")
	for _, want := range []string{
		"export A='b c'\n",
		"chown -R 'postgres': /node\n",
		`exec setpriv --reuid='postgres' --regid='postgres' --init-groups -- 'postgres' '-c' 'x='\''y z'\''' >>'/node/pg.log' 2>&1`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if s := startScriptText("n1", []string{"redis-server"}, nil, "", "/node/redis.log"); !strings.Contains(s, "exec 'redis-server' "+
		">>'/node/redis.log' 2>&1\n") {
		t.Errorf("script:\n%s", s)
	}
}

// A cut resets, a drop drops, both directions for each peer, idempotently; a heal removes every
// copy of either.
func TestIptablesScript(t *testing.T) {
	ips := []netip.Addr{netip.MustParseAddr("172.30.5.3")}
	for how, wants := range map[cutHow][]string{
		cutReset: {
			"iptables -w -C INPUT -s 172.30.5.3 -p tcp ! --tcp-flags RST RST -j REJECT --reject-with tcp-reset 2>/dev/null || iptables -w -I INPUT -s 172.30.5.3 -p tcp ! --tcp-flags RST RST -j REJECT --reject-with tcp-reset",
			"iptables -w -C OUTPUT -d 172.30.5.3 -p tcp ! --tcp-flags RST RST -j REJECT --reject-with tcp-reset 2>/dev/null || iptables -w -I OUTPUT -d 172.30.5.3 -p tcp ! --tcp-flags RST RST -j REJECT --reject-with tcp-reset",
		},
		cutDrop: {
			"iptables -w -C INPUT -s 172.30.5.3 -j DROP 2>/dev/null || iptables -w -I INPUT -s 172.30.5.3 -j DROP",
			"iptables -w -C OUTPUT -d 172.30.5.3 -j DROP 2>/dev/null || iptables -w -I OUTPUT -d 172.30.5.3 -j DROP",
		},
		cutHeal: {
			"while iptables -w -C INPUT -s 172.30.5.3 -j DROP 2>/dev/null; do iptables -w -D INPUT -s 172.30.5.3 -j DROP; done",
			"while iptables -w -C OUTPUT -d 172.30.5.3 -p tcp ! --tcp-flags RST RST -j REJECT --reject-with tcp-reset 2>/dev/null; do iptables -w -D OUTPUT -d 172.30.5.3 -p tcp ! --tcp-flags RST RST -j REJECT --reject-with tcp-reset; done",
		},
	} {
		script := iptablesScript(ips, how)
		for _, want := range wants {
			if !strings.Contains(script, want) {
				t.Errorf("%d lacks %q:\n%s", how, want, script)
			}
		}
		if how == cutReset && strings.Contains(script, "DROP") || how == cutDrop && strings.Contains(script, "REJECT") {
			t.Errorf("%d mixes the kinds:\n%s", how, script)
		}
	}
}

func TestControllerLabel(t *testing.T) {
	if !controllerAlive(controllerID(1)) {
		t.Error("pid 1 with its own start time is not alive")
	}
	if controllerAlive("1:999999999999") || controllerAlive("x:1") || controllerAlive("") {
		t.Error("a mismatched start time or a bad label is alive")
	}
}
