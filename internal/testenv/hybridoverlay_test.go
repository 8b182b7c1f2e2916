package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

func TestParseHybridClusterSubnets(t *testing.T) {
	got, err := ParseHybridClusterSubnets("10.132.0.0/14, 10.140.0.0/16/23")
	want := []HybridSubnetRange{{netip.MustParsePrefix("10.132.0.0/14"), 24}, {netip.MustParsePrefix("10.140.0.0/16"), 23}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %v, %v; want %v (a /24 per node unless the entry says otherwise)", got, err, want)
	}
	for in, msg := range map[string]string{
		"10.132.0.0":                  "want CIDR or CIDR/hostSubnetLength",
		"10.132.0.0/24":               "cannot use a host subnet length /24 with a cluster subnet /24",
		"10.132.0.0/14/x":             `host subnet length "x" is not a number`,
		"fd00::/48/64":                "not an IPv4 CIDR",
		"10.132.0.0/14,10.133.0.0/16": "overlaps",
		"10.132.0.0/14/31":            "cannot use a host subnet length /31",
		"10.132.0.0/14/23/1":          "want CIDR or CIDR/hostSubnetLength",
	} {
		if _, err := ParseHybridClusterSubnets(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want an error with %q", in, err, msg)
		}
	}
}

func FuzzParseHybridClusterSubnets(f *testing.F) {
	for _, s := range []string{"10.132.0.0/14", "10.132.0.0/14/23", "10.0.0.0/8/30,11.0.0.0/8", "1.2.3.4/33", "/", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ranges, err := ParseHybridClusterSubnets(s)
		if err != nil {
			return
		}
		for _, r := range ranges {
			if !r.CIDR.Addr().Is4() || r.HostSubnetLength <= r.CIDR.Bits() || r.HostSubnetLength > 30 || r.CIDR != r.CIDR.Masked() {
				t.Errorf("%q: range %+v", s, r)
			}
		}
	})
}

// syncWriter collects the simulated controller's log.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// The simulated hybrid overlay controller, against the real API server:
// Windows Nodes get distinct /24s of the hybrid cluster network in order,
// skipping the one a Node already had; Linux Nodes get none.
func TestHybridOverlayMasterAssignsSubnets(t *testing.T) {
	env := Get(t)
	c := admin(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := fmt.Sprintf("ho-%d", os.Getpid()%100000)
	node := func(name, os string, annotations map[string]string) {
		t.Helper()
		n := builder.Node(name).Labels(map[string]string{corev1.LabelOSStable: os}).Annotations(annotations).Build()
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	node(p+"-had", "windows", map[string]string{hybridOverlaySubnetAnnotation: "10.150.0.0/24"})
	var log syncWriter
	master, err := startHybridOverlayMaster(ctx, env.Config, "10.150.0.0/16", &log)
	if err != nil {
		t.Fatal(err)
	}
	node(p+"-win1", "windows", nil)
	node(p+"-linux", "linux", nil)
	node(p+"-win2", "windows", nil)
	subnets := map[string]string{}
	testkit.Eventually(t, 30*time.Second, "a hybrid subnet on each Windows Node", func() (bool, string) {
		for _, name := range []string{p + "-win1", p + "-win2"} {
			n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if n.Annotations[hybridOverlaySubnetAnnotation] == "" {
				return false, fmt.Sprintf("%s has none; the controller's log:\n%s", name, log.String())
			}
			subnets[name] = n.Annotations[hybridOverlaySubnetAnnotation]
		}
		return true, ""
	})
	if subnets[p+"-win1"] != "10.150.1.0/24" || subnets[p+"-win2"] != "10.150.2.0/24" {
		t.Errorf("subnets %v, want 10.150.1.0/24 and 10.150.2.0/24 (10.150.0.0/24 was taken)", subnets)
	}
	// The controller has handled the Linux Node twice (its creation, then
	// an update such as its pod CIDR, or a resync every 3 s) and left it
	// alone.
	testkit.Eventually(t, 30*time.Second, "the controller handling the Linux Node twice", func() (bool, string) {
		n := master.handledCount(p + "-linux")
		return n >= 2, fmt.Sprintf("%d events handled", n)
	})
	if n, err := c.CoreV1().Nodes().Get(ctx, p+"-linux", metav1.GetOptions{}); err != nil || n.Annotations[hybridOverlaySubnetAnnotation] != "" {
		t.Errorf("a Linux Node: %v, %v", n.Annotations, err)
	}
	if !strings.Contains(log.String(), "simulated") {
		t.Errorf("the controller's log does not say it is simulated:\n%s", log.String())
	}
}
