package junit

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMarshalCountsFailuresAndErrorsAndEscapes(t *testing.T) {
	out, err := Marshal(Suite{Name: "lockcheck run", Cases: []Case{
		{Name: "k2-set-nx-px", ClassName: "lockcheck.run", Time: 5200 * time.Millisecond, Output: "matches"},
		{Name: "no-faults-redlock", ClassName: "lockcheck.run", Time: time.Second,
			Failure: "verdict does not match expect", Detail: "mutual_exclusion: expected holds, got <violated> & more"},
		{Name: "partition-zk", ClassName: "lockcheck.run", Error: "start servers: java not found"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suite    struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Time    string `xml:"time,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("not valid XML: %v\n%s", err, out)
	}
	if doc.Tests != 3 || doc.Failures != 1 || doc.Errors != 1 {
		t.Fatalf("tests/failures/errors = %d/%d/%d, want 3/1/1", doc.Tests, doc.Failures, doc.Errors)
	}
	c := doc.Suite.Cases
	if c[0].Failure != nil || c[0].Time != "5.200" {
		t.Errorf("first case: %+v", c[0])
	}
	if c[1].Failure == nil || !strings.Contains(c[1].Failure.Text, "<violated> & more") {
		t.Errorf("failure text lost or mangled: %+v", c[1].Failure)
	}
	if !strings.HasPrefix(string(out), "<?xml") {
		t.Error("missing XML header")
	}
}

// A written report reads back as the same cases: how lockcheck merge combines the shards'.
func TestReadFileRoundTrip(t *testing.T) {
	in := Suite{Name: "lockcheck matrix", Cases: []Case{
		{Name: "set-nx-px × none", ClassName: "lockcheck.matrix.set-nx-px", Time: 5200 * time.Millisecond, Output: "safe"},
		{Name: "setnx-del × kill-holder", ClassName: "lockcheck.matrix.setnx-del", Time: time.Second,
			Failure: "stuck, required rescued", Detail: "lock <stuck> & more"},
		{Name: "zk × none", ClassName: "lockcheck.matrix.zk", Error: "harness error", Detail: "java not found"},
	}}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteFile(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("read back\n%+v\nwant\n%+v", out, in)
	}
	bad := filepath.Join(t.TempDir(), "bad.xml")
	os.WriteFile(bad, []byte("<testsuites><testsuite><testcase name=\"x\" time=\"soon\"/></testsuite></testsuites>"), 0o644)
	if _, err := ReadFile(bad); err == nil || !strings.Contains(err.Error(), "bad.xml") || !strings.Contains(err.Error(), `"soon"`) {
		t.Fatalf("bad time: %v", err)
	}
}
