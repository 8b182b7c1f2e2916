package platform

import (
	"strings"
	"testing"
)

// Resolve is tested against the real API server of both test-world
// flavors in internal/openshift (TestDetectOnBothFlavors).
func TestParse(t *testing.T) {
	for in, want := range map[string]Platform{"": Auto, "auto": Auto, "openshift": OpenShift, "kubernetes": Kubernetes} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"OpenShift", "okd", "k8s", " auto"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "auto, openshift, kubernetes") {
			t.Errorf("Parse(%q) = %v; want an error listing the values", bad, err)
		}
	}
}
