package zookeeper

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The first start on a machine makes the server's class-data archive, and every server started
// on this machine's processes then maps it (the JVM would ignore one that does not match).
func TestTheFirstStartMakesTheClassArchiveThatServersThenMap(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // a machine without the archive
	if f := archive().Flags(); f != nil {
		t.Fatalf("an archive before any start: %v", f)
	}
	_, z := startZK(t, 1, "client-1")
	st, err := os.Stat(archive().Path())
	if err != nil || st.Size() < 1<<20 {
		t.Fatalf("no archive after the first start: %v", err)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid(z.Server("zk1"))) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if args := string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})); !strings.Contains(args, "-XX:SharedArchiveFile="+archive().Path()) {
		t.Fatalf("the server does not map the archive: %s", args)
	}
}
