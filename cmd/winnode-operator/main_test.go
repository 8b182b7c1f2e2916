package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.String()) != version {
		t.Errorf("--version printed %q", out.String())
	}
}

// TestCIDRFlags: a malformed --node-address-cidrs or --service-cidr stops
// the operator before it starts, naming the flag.
func TestCIDRFlags(t *testing.T) {
	for _, args := range [][]string{{"--node-address-cidrs", "10.0.0.1"}, {"--service-cidr", "10.96.0.0/40"}} {
		err := run(context.Background(), append(args, "--version"), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err %v, want one naming %s", args, err, args[0])
		}
	}
	if err := run(context.Background(), []string{"--node-address-cidrs", "10.0.0.0/8,fd00::/8", "--service-cidr", "172.30.0.0/16", "--version"}, &bytes.Buffer{}); err != nil {
		t.Errorf("valid CIDRs: %v", err)
	}
}

func TestJoinCredentialsFlagIsChecked(t *testing.T) {
	err := run(context.Background(), []string{"--join-credentials", "password", "--version"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--join-credentials") || !strings.Contains(err.Error(), "service-account") {
		t.Fatalf("run with --join-credentials password = %v; want an error naming the flag and its values", err)
	}
}

func TestPlatformFlagIsChecked(t *testing.T) {
	err := run(context.Background(), []string{"--platform", "okd", "--version"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--platform") || !strings.Contains(err.Error(), "auto, openshift, kubernetes") {
		t.Fatalf("run with --platform okd = %v; want an error naming the flag and its values", err)
	}
	for _, p := range []string{"auto", "openshift", "kubernetes"} {
		if err := run(context.Background(), []string{"--platform", p, "--version"}, io.Discard); err != nil {
			t.Errorf("--platform %s: %v", p, err)
		}
	}
}

// TestOperatorServesProbesMetricsAndLeads runs the operator as main does,
// against the test control plane: it takes the Lease winnode-operator-lock,
// answers /healthz and /readyz, serves the winnode_* metrics, and stops when
// its context ends.
func TestOperatorServesProbesMetricsAndLeads(t *testing.T) {
	env := testenv.Get(t)
	kube := kubernetes.NewForConfigOrDie(env.Config)
	// A name of its own each run: a namespace deleted by an earlier run
	// (-count=2) may still be terminating.
	ns := "winnode-operator-main-test-" + utilrand.String(5)
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubelet.exe"), []byte("stand-in"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := payload.Write(dir, []payload.File{{Name: "kubelet.exe", HostPath: `C:\k\kubelet.exe`, Version: "v1.37.1"}}); err != nil {
		t.Fatal(err)
	}
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	t.Setenv("WATCH_NAMESPACE", ns) // the namespace comes from the environment
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"--kubeconfig", env.KubeconfigPath,
			"--payload-dir", dir,
			"--metrics-bind-address", metricsAddr,
			"--health-probe-bind-address", probeAddr,
			"--leader-elect",
		}, io.Discard)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the operator ended with: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the operator did not stop within 30s of its context ending")
		}
	}
	t.Cleanup(stop)

	get := func(ctx context.Context, url string) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%s: %s", url, resp.Status)
		}
		return string(body), err
	}
	bg := context.Background()
	testkit.Eventually(t, time.Minute, "/healthz and /readyz answering", func() (bool, string) {
		if _, err := get(bg, "http://"+probeAddr+"/healthz"); err != nil {
			return false, err.Error()
		}
		_, err := get(bg, "http://"+probeAddr+"/readyz")
		return err == nil, fmt.Sprint(err)
	})
	testkit.Eventually(t, time.Minute, "the Lease "+LeaderElectionID+" held", func() (bool, string) {
		l, err := kube.CoordinationV1().Leases(ns).Get(bg, LeaderElectionID, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", "no holder"
	})
	testkit.Eventually(t, time.Minute, "the winnode_* metrics served", func() (bool, string) {
		body, err := get(bg, "http://"+metricsAddr+"/metrics")
		if err != nil {
			return false, err.Error()
		}
		for _, m := range []string{`winnode_instances{phase="Ready"}`, "winnode_configuration_duration_seconds_bucket", "winnode_bytes_uploaded_total", `winnode_ssh_failures_total{reason="Unreachable"} 0`, "controller_runtime_reconcile_total"} {
			if !strings.Contains(body, m) {
				return false, "/metrics lacks " + m
			}
		}
		return true, ""
	})
	stop()
}

func TestHybridClusterCIDRFlagIsChecked(t *testing.T) {
	err := run(context.Background(), []string{"--hybrid-cluster-cidr", "10.132.0.0", "--version"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--hybrid-cluster-cidr") {
		t.Errorf("a --hybrid-cluster-cidr that is no CIDR: %v; want an error naming the flag", err)
	}
	if err := run(context.Background(), []string{"--network", "ovn-hybrid", "--hybrid-cluster-cidr", "10.132.0.0/14", "--version"}, io.Discard); err != nil {
		t.Errorf("valid ovn-hybrid flags: %v", err)
	}
}

// TestPullJoinTimeoutFlagIsChecked: --pull-join-timeout takes a duration
// of a minute or more; a shorter one, zero, a negative one or no duration
// stops the operator before it starts, naming the flag. Unset, it is the
// default, which passes its own check.
func TestPullJoinTimeoutFlagIsChecked(t *testing.T) {
	for _, bad := range []string{"30s", "0", "-5m", "soon"} {
		err := run(context.Background(), []string{"--pull-join-timeout", bad, "--version"}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "pull-join-timeout") {
			t.Errorf("--pull-join-timeout %s: %v; want an error naming the flag", bad, err)
		}
	}
	for _, args := range [][]string{{"--pull-join-timeout", "1m"}, {"--pull-join-timeout", "2h"}, nil} {
		if err := run(context.Background(), append(args, "--version"), io.Discard); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestSkipPreflightFlagIsChecked: --skip-preflight names checks; a name that
// is no check's stops the operator before it starts, naming the flag, the
// name and the checks (an instance's annotation gets an event instead:
// TestPreflight in test/e2e).
func TestSkipPreflightFlagIsChecked(t *testing.T) {
	err := run(context.Background(), []string{"--skip-preflight", "dns,klock", "--version"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--skip-preflight") || !strings.Contains(err.Error(), "klock") || !strings.Contains(err.Error(), "clock") {
		t.Fatalf("run with --skip-preflight dns,klock = %v; want an error naming the flag, klock and the checks", err)
	}
	if err := run(context.Background(), []string{"--skip-preflight", "clock, dns", "--version"}, io.Discard); err != nil {
		t.Errorf("--skip-preflight clock, dns: %v", err)
	}
}

// TestMaxConcurrentConfigurationsIsACap: unset, the flag caps nothing (the
// machine's bound decides, internal/controller/instance concurrency.go);
// a negative value is refused, naming the flag.
func TestMaxConcurrentConfigurationsIsACap(t *testing.T) {
	if err := run(context.Background(), []string{"--max-concurrent-configurations", "-1", "--version"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--max-concurrent-configurations") {
		t.Errorf("--max-concurrent-configurations -1: %v; want an error naming the flag", err)
	}
	for _, v := range []string{"0", "4"} {
		if err := run(context.Background(), []string{"--max-concurrent-configurations", v, "--version"}, io.Discard); err != nil {
			t.Errorf("--max-concurrent-configurations %s: %v", v, err)
		}
	}
}

// The leader election's timings are checked as client-go's leader
// election checks them, naming the flags, before anything starts.
func TestLeaderElectionFlagsAreChecked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" : accepted
	}{
		{nil, ""},
		{[]string{"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s"}, ""},
		{[]string{"--leader-elect-lease-duration=100s"}, "--leader-elect-lease-duration"},
		{[]string{"--leader-elect-renew-deadline=30s"}, "--leader-elect-renew-deadline"},
		{[]string{"--leader-elect-retry-period=0s"}, "--leader-elect-retry-period"},
	} {
		err := run(context.Background(), append(c.args, "--version"), io.Discard)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("run with %v: %v; want an error naming %q (none: accepted)", c.args, err, c.want)
		}
	}
	o := managerOptions("0", "0", bindLeaderElection(flag.NewFlagSet("t", flag.ContinueOnError)), "ns")
	if !o.LeaderElection || *o.LeaseDuration != DefaultLeaseDuration || *o.RenewDeadline != DefaultRenewDeadline || *o.RetryPeriod != DefaultRetryPeriod {
		t.Errorf("the manager's leader election by default: on %v, %v/%v/%v; want on, %v/%v/%v", o.LeaderElection,
			*o.LeaseDuration, *o.RenewDeadline, *o.RetryPeriod, DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod)
	}
}
