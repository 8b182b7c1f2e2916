package openshift_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/openshift"
	"github.com/winnode/winnode/internal/platform"
	"github.com/winnode/winnode/internal/testenv"
)

// --platform=auto against the real API server of each flavor: OpenShift
// where config.openshift.io is served (its CRDs installed), Kubernetes on
// the kubeadm-like control plane.
func TestDetectOnBothFlavors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts testenv.Options
		want platform.Platform
	}{
		{"kubernetes", testenv.Options{}, platform.Kubernetes},
		{"openshift", testenv.Options{OpenShift: true}, platform.OpenShift},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.GetWith(t, tc.opts)
			kube := kubernetes.NewForConfigOrDie(env.Config)
			got, why, err := platform.Resolve(kube.Discovery(), platform.Auto)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("platform %s (%s), want %s", got, why, tc.want)
			}
			t.Logf("%s: %s", got, why)
			// An explicit --platform is taken as it is.
			if p, _, _ := platform.Resolve(kube.Discovery(), platform.Kubernetes); p != platform.Kubernetes {
				t.Errorf("--platform=kubernetes resolved to %s", p)
			}
		})
	}
}

// The facts come from the objects the openshift flavor seeds, as an
// OpenShift 4 cluster has them; the flavor has no cluster-info to fall
// back on.
func TestFactsFromSeededObjects(t *testing.T) {
	env := testenv.GetWith(t, testenv.Options{OpenShift: true})
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := kube.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, "cluster-info", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the openshift flavor has kube-public/cluster-info (%v)", err)
	}
	r, err := openshift.NewReader(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	f, err := openshift.Load(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(env.CACertFile)
	if err != nil {
		t.Fatal(err)
	}
	if f.MachineConfig != env.OpenShift.RenderedWorker {
		t.Errorf("MachineConfig %s, want the seeded %s", f.MachineConfig, env.OpenShift.RenderedWorker)
	}
	if f.Server != env.OpenShift.InternalURL || f.Server == env.Host {
		t.Errorf("server %s, want Infrastructure's apiServerInternalURI %s (not the admin URL %s)", f.Server, env.OpenShift.InternalURL, env.Host)
	}
	if !bytes.Equal(f.CAData, ca) || !bytes.Equal(f.KubeletCA, ca) {
		t.Errorf("CA (from %s) or kubelet CA is not the cluster CA", f.CASource)
	}
	if !slices.Equal(f.ClusterDNS, []string{testenv.KubernetesDNSIP}) || f.ClusterDomain != "cluster.local" {
		t.Errorf("cluster DNS %v %q", f.ClusterDNS, f.ClusterDomain)
	}
	if !slices.Equal(f.ServiceNetwork, []string{testenv.ServiceCIDR}) || !slices.Equal(f.ClusterNetwork, []string{testenv.ClusterCIDR}) {
		t.Errorf("networks: Service %v, cluster %v", f.ServiceNetwork, f.ClusterNetwork)
	}
	if f.CloudProvider != "" || f.CloudConfig != nil {
		t.Errorf("platform None, yet cloud provider %q, cloud config %q", f.CloudProvider, f.CloudConfig)
	}
	var cv configv1.ClusterVersion
	if err := r.Get(ctx, client.ObjectKey{Name: openshift.ClusterVersionName}, &cv); err != nil {
		t.Fatal(err)
	}
	if f.ClusterID == "" || f.ClusterID != string(cv.Spec.ClusterID) {
		t.Errorf("cluster ID %q, want ClusterVersion's spec.clusterID %q", f.ClusterID, cv.Spec.ClusterID)
	}
	var mc mcfgv1.MachineConfig
	if err := r.Get(ctx, client.ObjectKey{Name: f.MachineConfig}, &mc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(mc.Spec.Config.Raw, []byte(`"version":"3.5.0"`)) {
		t.Errorf("the rendered worker is not Ignition 3.5.0: %.200s", mc.Spec.Config.Raw)
	}
}
