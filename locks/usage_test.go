package locks

import (
	"strings"
	"testing"
)

// Every design declares its usage: a reentrant one offers reenter, every in-process one abandon,
// every one try and release-retry; an external program only what it lists; a wrong name gets
// the valid ones.
func TestDesignsDeclareTheirUsage(t *testing.T) {
	redisson, err := Get("redisson")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(redisson.Offered(), ","); got != "reenter,try,abandon,release-retry" {
		t.Errorf("redisson offers %s", got)
	}
	setNX, _ := Get("set-nx-px")
	if why := setNX.NotOffered(UsageReenter); !strings.Contains(why, "not reentrant") {
		t.Errorf("set-nx-px must not offer reenter: %q", why)
	}
	ext := ExternalDesign(Program{Name: "mine", Command: []string{"true"}})
	if got := strings.Join(ext.Offered(), ","); got != "try,release-retry" {
		t.Errorf("a program that lists nothing offers %s", got)
	}
	if why := ext.NotOffered(UsageAbandon); !strings.Contains(why, `does not offer usage step "abandon" (it offers: try, release-retry)`) {
		t.Errorf("why a program cannot be abandoned: %q", why)
	}
	ext = ExternalDesign(Program{Name: "mine", Command: []string{"true"}, Usage: []string{UsageReenter, UsageAbandon}})
	if !ext.Reentrant || !ext.Offers(UsageAbandon) {
		t.Errorf("a program that lists reenter and abandon offers them: %v", ext.Offered())
	}
	if err := CheckUsage([]string{"reenter", "abandn"}); err == nil || !strings.Contains(err.Error(), "valid steps: reenter, try, abandon, release-retry") {
		t.Errorf("an unknown step: %v", err)
	}
	if err := CheckUsage([]string{"try", "try"}); err == nil {
		t.Error("a step listed twice must be refused")
	}
	for _, d := range All() {
		if len(d.Offered()) == 0 {
			t.Errorf("%s offers no usage at all", d.Name)
		}
	}
}

// A library at a version keeps its adapter's points and usage: etcd's passes "answered" and
// gives attempts up; redsync's does neither.
func TestVersionedLibrariesDeclareTheirAdaptersUsage(t *testing.T) {
	etcd, err := Get("etcd-unchecked@v3.3.9")
	if err != nil {
		t.Fatal(err)
	}
	if !etcd.Offers(UsageAbandon) || strings.Join(etcd.Points, ",") != "answered" {
		t.Errorf("etcd-unchecked@v3.3.9: usage %v, points %v", etcd.Offered(), etcd.Points)
	}
	redsync, err := Get("redsync@v4.0.3")
	if err != nil {
		t.Fatal(err)
	}
	if redsync.Offers(UsageAbandon) {
		t.Errorf("redsync's adapter does not give attempts up, yet it offers %v", redsync.Offered())
	}
}
