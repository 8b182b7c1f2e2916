package preflight

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/winnode/winnode/internal/plan"
)

// want is a result and words its message must hold (the fix, the cause).
type want struct {
	result plan.PreflightOutcome
	words  []string
}

func check(t *testing.T, name string, got plan.PreflightResult, check string, w want) {
	t.Helper()
	if got.Check != check || got.Result != w.result {
		t.Errorf("%s: got %s %s (%s), want %s %s", name, got.Check, got.Result, got.Message, check, w.result)
	}
	for _, word := range w.words {
		if !strings.Contains(got.Message, word) {
			t.Errorf("%s: message %q lacks %q", name, got.Message, word)
		}
	}
}

func TestCheckWindowsBuild(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build string
		ubr   int
		want  want
	}{
		{"2019 any update", "10.0.17763", 1, want{plan.PreflightPass, []string{"Windows Server 2019"}}},
		{"2022 at the floor", "10.0.20348", 681, want{plan.PreflightPass, []string{"20348.681"}}},
		{"2022 below the floor", "10.0.20348", 643, want{plan.PreflightFail, []string{"KB5012637", "20348.681", "cumulative update"}}},
		{"2025", "10.0.26100", 0, want{plan.PreflightPass, nil}},
		{"2016", "10.0.14393", 5000, want{plan.PreflightFail, []string{"10.0.14393", "supported release"}}},
		{"unknown", "", 0, want{plan.PreflightFail, []string{"(unknown)"}}},
	} {
		check(t, tc.name, CheckWindowsBuild(tc.build, tc.ubr), WindowsBuild, tc.want)
	}
}

func TestCheckContainersFeature(t *testing.T) {
	for _, tc := range []struct {
		name    string
		state   FeatureState
		pending bool
		want    want
	}{
		{"enabled", "Enabled", false, want{plan.PreflightPass, nil}},
		{"disabled", "Disabled", false, want{plan.PreflightWarn, []string{"restarts the host", "Install-WindowsFeature Containers"}}},
		{"enable pending", "EnablePending", true, want{plan.PreflightWarn, []string{"waits for a restart"}}},
		{"other restart pending", "Enabled", true, want{plan.PreflightWarn, []string{"restart is pending", "Restart-Computer"}}},
		{"no such feature", "", false, want{plan.PreflightFail, []string{"no Containers feature"}}},
	} {
		check(t, tc.name, CheckContainersFeature(tc.state, tc.pending), ContainersFeature, tc.want)
	}
}

func TestCheckDisk(t *testing.T) {
	for _, tc := range []struct {
		name string
		free uint64
		min  int
		want want
	}{
		{"default, enough", 30 << 30, 0, want{plan.PreflightPass, []string{"30 GiB free", "at least 30 GiB"}}},
		{"default, short", 29<<30 + 1<<29, 0, want{plan.PreflightFail, []string{"29.5 GiB free", "30 GiB", "free space"}}},
		{"configured lower", 12 << 30, 10, want{plan.PreflightPass, nil}},
		{"configured higher", 40 << 30, 50, want{plan.PreflightFail, []string{"50 GiB"}}},
	} {
		check(t, tc.name, CheckDisk(tc.free, tc.min), Disk, tc.want)
	}
}

func TestCheckClock(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		skew time.Duration
		want want
	}{
		{"in step", 2 * time.Second, want{plan.PreflightPass, nil}},
		{"a minute exactly", time.Minute, want{plan.PreflightPass, nil}},
		{"two minutes ahead", 2 * time.Minute, want{plan.PreflightWarn, []string{"2m0s ahead of", "w32tm /resync"}}},
		{"five minutes behind exactly", -5 * time.Minute, want{plan.PreflightWarn, []string{"behind"}}},
		{"ten minutes behind", -10 * time.Minute, want{plan.PreflightFail, []string{"10m0s behind", "not be valid yet", "w32tm /resync"}}},
		{"an hour ahead", time.Hour, want{plan.PreflightFail, []string{"1h0m0s ahead of"}}},
	} {
		check(t, tc.name, CheckClock(now.Add(tc.skew), now), Clock, tc.want)
	}
	check(t, "not reported", CheckClock(time.Time{}, now), Clock, want{plan.PreflightWarn, []string{"could not run"}})
}

func TestCheckAPIServer(t *testing.T) {
	check(t, "reached", CheckAPIServer("https://10.0.0.1:6443", nil), APIServer, want{plan.PreflightPass, []string{"TLS handshake"}})
	check(t, "unreachable", CheckAPIServer("https://10.0.0.1:6443", errors.New("connectex: timed out")), APIServer,
		want{plan.PreflightFail, []string{"https://10.0.0.1:6443", "connectex: timed out", "open the route"}})
	check(t, "no endpoint", CheckAPIServer("", nil), APIServer, want{plan.PreflightWarn, []string{"could not run"}})
}

func TestCheckContainerRuntime(t *testing.T) {
	foreign := plan.ServiceInfo{Present: true, Running: true, State: "Running", Command: `"C:\Program Files\containerd\containerd.exe" --run-service`}
	ours := plan.ServiceInfo{Present: true, Running: true, Winnode: true}
	for _, tc := range []struct {
		name string
		ctd  plan.ServiceInfo
		mode plan.ContainerRuntime
		want want
	}{
		{"managed, bare host", plan.ServiceInfo{}, plan.RuntimeManaged, want{plan.PreflightPass, nil}},
		{"managed, ours", ours, plan.RuntimeManaged, want{plan.PreflightPass, nil}},
		{"managed, foreign", foreign, plan.RuntimeManaged, want{plan.PreflightFail, []string{"ContainerRuntimeConflict", "--unregister-service", "Existing"}}},
		{"existing, running", foreign, plan.RuntimeExisting, want{plan.PreflightPass, nil}},
		{"existing, none", plan.ServiceInfo{}, plan.RuntimeExisting, want{plan.PreflightFail, []string{"NoContainerRuntime", "not installed"}}},
	} {
		check(t, tc.name, CheckContainerRuntime(tc.ctd, tc.mode), ContainerRuntime, tc.want)
	}
}

func TestCheckDefenderAndAddressing(t *testing.T) {
	check(t, "defender runs", CheckDefender(true), Defender, want{plan.PreflightPass, []string{"exclusions"}})
	check(t, "defender off", CheckDefender(false), Defender, want{plan.PreflightPass, nil})
	check(t, "dhcp, listed by it", CheckAddressing(true, "10.1.2.3", []string{"10.1.2.3"}), Addressing, want{plan.PreflightWarn, []string{"static address", "10.1.2.3"}})
	check(t, "dhcp, listed by name", CheckAddressing(false, "win1.corp", []string{"10.1.2.3"}), Addressing, want{plan.PreflightPass, nil})
	check(t, "static", CheckAddressing(true, "10.1.2.3", nil), Addressing, want{plan.PreflightPass, nil})
}

func TestCheckNodeNameAndDNS(t *testing.T) {
	check(t, "allowed", CheckNodeName("win-1", nil), NodeName, want{plan.PreflightPass, nil})
	check(t, "refused", CheckNodeName("kubernetes", errors.New("node name kubernetes is a name of the API server's certificate")), NodeName,
		want{plan.PreflightFail, []string{"API server's certificate", "Rename-Computer"}})
	hostAddrs := []string{"10.1.2.3", "172.16.0.4"}
	check(t, "resolves", CheckDNS("win-1", []string{"10.1.2.3"}, nil, hostAddrs), DNS, want{plan.PreflightPass, nil})
	check(t, "resolves elsewhere", CheckDNS("win-1", []string{"10.9.9.9"}, nil, hostAddrs), DNS, want{plan.PreflightWarn, []string{"10.9.9.9", "A record"}})
	check(t, "does not resolve", CheckDNS("win-1", nil, errors.New("no such host"), hostAddrs), DNS, want{plan.PreflightWarn, []string{"no such host"}})
}

func TestSkipAndFirstFailure(t *testing.T) {
	results := []plan.PreflightResult{
		{Check: Disk, Result: plan.PreflightPass},
		{Check: Clock, Result: plan.PreflightFail},
		{Check: DNS, Result: plan.PreflightWarn},
		{Check: APIServer, Result: plan.PreflightFail},
	}
	if f, ok := FirstFailure(results); !ok || f.Check != Clock {
		t.Errorf("FirstFailure = %v %v, want clock", f, ok)
	}
	skip, unknown := ParseSkip(" clock, DNS ,,klock")
	if !slices.Equal(skip, []string{Clock, DNS}) || !slices.Equal(unknown, []string{"klock"}) {
		t.Errorf("ParseSkip = %v %v", skip, unknown)
	}
	kept, skipped := Skip(results, skip)
	if len(kept) != 2 || !slices.Equal(skipped, []string{Clock, DNS}) {
		t.Errorf("Skip = %v %v", kept, skipped)
	}
	if f, ok := FirstFailure(kept); !ok || f.Check != APIServer {
		t.Errorf("after skipping, FirstFailure = %v %v, want api-server", f, ok)
	}
	if _, ok := FirstFailure(kept[:1]); ok {
		t.Error("a pass is no failure")
	}
}

func TestReason(t *testing.T) {
	for check, want := range map[string]string{
		WindowsBuild: "WindowsBuild", APIServer: "APIServer", DNS: "DNS", Clock: "Clock",
		ContainerRuntime: "ContainerRuntimeConflict", ContainersFeature: "ContainersFeature", NodeName: "NodeName",
	} {
		if got := Reason(check); got != want {
			t.Errorf("Reason(%s) = %s, want %s", check, got, want)
		}
	}
}

func TestSortFollowsNames(t *testing.T) {
	in := []plan.PreflightResult{{Check: DNS}, {Check: WindowsBuild}, {Check: Clock}}
	got := Sort(in)
	if got[0].Check != WindowsBuild || got[1].Check != Clock || got[2].Check != DNS {
		t.Errorf("Sort = %v", got)
	}
}

func TestFromHost(t *testing.T) {
	in := []plan.PreflightResult{
		{Check: Disk, Result: plan.PreflightFail},
		{Check: Disk, Result: plan.PreflightPass},               // a second answer for one check
		{Check: NodeName, Result: plan.PreflightPass},           // the operator's to decide
		{Check: "made-up", Result: plan.PreflightWarn},          // no such check
		{Check: APIServer, Result: plan.PreflightOutcome("ok")}, // no such result
		{Check: Defender, Result: plan.PreflightPass},
	}
	kept, dropped := FromHost(in)
	if len(kept) != 2 || kept[0].Check != Disk || kept[0].Result != plan.PreflightFail || kept[1].Check != Defender || dropped != 4 {
		t.Errorf("FromHost = %+v, %d dropped", kept, dropped)
	}
}

func TestCheckKubeletPort(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want plan.PreflightOutcome
		text string
	}{
		{"reached", nil, plan.PreflightPass, "reached the kubelet of node win-a on port 10250"},
		{"reset", errors.New("error trying to reach service: read tcp: connection reset by peer"), plan.PreflightWarn, "open TCP 10250"},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "nodes/proxy"}, "win-a", errors.New("RBAC")), plan.PreflightWarn, "could not"},
	} {
		r := CheckKubeletPort("win-a", 10250, c.err)
		if r.Check != KubeletPort || r.Result != c.want || !strings.Contains(r.Message, c.text) {
			t.Errorf("%s: %+v, want %s with %q", c.name, r, c.want, c.text)
		}
	}
}
