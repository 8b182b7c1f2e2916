//go:build !windows

package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/plan"
)

// winnode-agent logs reads a service's log under C:\var\log (its end with
// --tail, from a byte with --from, from 0 again once the file is smaller:
// rotated), lists the rotated copies, and refuses a missing file, a name
// that is no service's and bad flags, each naming what is wrong.
func TestLogsOnSimulatedHost(t *testing.T) {
	s := newSimHost(t)
	s.put(plan.LogFile("kube-proxy"), []byte("one\ntwo\nthree\n"))
	s.put(`C:\var\log\kube-proxy\kube-proxy-20261126-101010.log`, []byte("older\n"))

	logs := func(args ...string) (plan.LogsDocument, []byte, int) {
		out, code := s.agent(append([]string{"logs"}, args...)...)
		var doc plan.LogsDocument
		if code == 0 {
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatalf("logs %v: %v\n%s", args, err, out)
			}
		}
		return doc, out, code
	}
	doc, out, code := logs("--service", "kube-proxy", "--tail", "2")
	if code != 0 || doc.Text != "two\nthree\n" || doc.File != plan.LogFile("kube-proxy") || doc.Size != 14 ||
		len(doc.Rotated) != 1 || doc.Rotated[0] != "kube-proxy-20261126-101010.log" {
		t.Errorf("--tail 2: exit %d, %+v\n%s", code, doc, out)
	}
	if doc, _, _ := logs("--service", "kube-proxy", "--from", "8"); doc.Text != "three\n" || doc.Offset != 8 {
		t.Errorf("--from 8: %+v", doc)
	}
	if doc, _, _ := logs("--service", "kube-proxy", "--from", "99"); doc.Text != "one\ntwo\nthree\n" || doc.Offset != 0 {
		t.Errorf("--from past the end (a rotated file): %+v", doc)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--service", "kubelet"}, `kubelet\\kubelet.log`},
		{[]string{"--service", `..\..\Windows`}, "not a service name"},
		{[]string{"--service", "kube-proxy", "--tail", "-2"}, "--tail"},
		{[]string{"--service", "kube-proxy", "--since", "-1h"}, "--since"},
	} {
		_, out, code := logs(tc.args...)
		if code == 0 || !strings.Contains(string(out), tc.want) {
			t.Errorf("logs %v: exit %d, %s; want a failure naming %q", tc.args, code, out, tc.want)
		}
	}
}
