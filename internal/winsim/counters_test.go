package winsim

import (
	"testing"

	"github.com/pkg/sftp"
)

// The counters see each connection, session, exec and SFTP subsystem, and
// the bytes that cross the link, as a capture on the host would.
func TestCountersCountWhatTheClientDoes(t *testing.T) {
	th := newTestHost(t, Options{})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	before := th.Counters()
	c := th.dial(t)
	for range 2 {
		if _, errOut, code := run(t, c, `C:\k\helper.exe cat`, "x"); code != 0 {
			t.Fatalf("exec: exit %d, stderr %q", code, errOut)
		}
	}
	sc, err := sftp.NewClient(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Stat("/C:/k/helper.exe"); err != nil {
		t.Fatal(err)
	}
	sc.Close()
	got := th.Counters().Sub(before)
	want := Counters{Connections: 1, Sessions: 3, Execs: 2, SFTP: 1}
	if got.Connections != want.Connections || got.Sessions != want.Sessions || got.Execs != want.Execs || got.SFTP != want.SFTP {
		t.Errorf("counters %+v, want connections, sessions, execs, sftp of %+v", got, want)
	}
	if got.BytesIn <= 0 || got.BytesOut <= 0 {
		t.Errorf("counters %+v: no bytes counted either way", got)
	}
	th.ResetCounters()
	if z := th.Counters(); z != (Counters{}) {
		t.Errorf("after ResetCounters: %+v", z)
	}
}
