package builder

import (
	"testing"
	"time"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// Each builder makes exactly the literal it stands for, and each Build a
// copy of its own.

func same(t *testing.T, got, want any) {
	t.Helper()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("built\n%+v\nwant\n%+v", got, want)
	}
}

func TestInstance(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cond := metav1.Condition{Type: winnodev1.ConditionReachable, Status: metav1.ConditionTrue}
	b := Instance("wi").Host("10.0.0.5", "Administrator").Port(2222).Manual().Labels(map[string]string{"a": "b"}).
		Generation(3).Created(created).Phase(winnodev1.PhaseReady).Step("sync").Node("win-1", "uid-1").
		Reported("WIN-1", "win-1.corp", "10.0.0.5", "10.0.0.6").BootstrapToken("abcdef").LastError("boom").
		Version("v1").PinnedHostKey("ssh-ed25519 AAAA").KeyFingerprint("SHA256:k").Conditions(cond)
	same(t, b.Build(), &winnodev1.WindowsInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "wi", Labels: map[string]string{"a": "b"}, Generation: 3, CreationTimestamp: metav1.NewTime(created)},
		Spec: winnodev1.WindowsInstanceSpec{Address: "10.0.0.5", Username: "Administrator", Port: 2222,
			Source: winnodev1.SourceRef{Kind: winnodev1.SourceManual}},
		Status: winnodev1.WindowsInstanceStatus{Phase: winnodev1.PhaseReady, Step: "sync", NodeName: "win-1", NodeUID: "uid-1",
			Hostname: "WIN-1", FQDN: "win-1.corp", Addresses: []string{"10.0.0.5", "10.0.0.6"}, BootstrapTokenID: "abcdef",
			LastError: "boom", Version: "v1", HostKey: "ssh-ed25519 AAAA", KeyFingerprint: "SHA256:k", Conditions: []metav1.Condition{cond}},
	})
	one, two := b.Build(), b.Build()
	one.Labels["a"] = "changed"
	if two.Labels["a"] != "b" {
		t.Error("two Builds share their labels")
	}
	same(t, Instance("bare").Build(), &winnodev1.WindowsInstance{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})
}

func TestNode(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	got := Node("win-1").Labels(map[string]string{"l": "1"}).Annotations(map[string]string{"a": "1"}).Created(created).
		ProviderID("winsim://x").PodCIDR("10.244.1.0/24").Unschedulable().Ready(corev1.ConditionTrue).
		Address(corev1.NodeInternalIP, "10.0.0.5").Info("Windows Server 2022 Datacenter", "v1.37.1").Build()
	same(t, got, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "win-1", Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "1"},
			CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.NodeSpec{ProviderID: "winsim://x", PodCIDR: "10.244.1.0/24", Unschedulable: true},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}},
			NodeInfo:   corev1.NodeSystemInfo{OSImage: "Windows Server 2022 Datacenter", KubeletVersion: "v1.37.1"},
		},
	})
	beat := Node("n").Heartbeat(corev1.ConditionTrue, "KubeletReady").Build().Status.Conditions[0]
	if beat.Reason != "KubeletReady" || beat.LastHeartbeatTime.IsZero() || beat.LastTransitionTime.IsZero() {
		t.Errorf("Heartbeat set %+v", beat)
	}
}

func TestCSR(t *testing.T) {
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	got := CSR("csr-1").GenerateName("p-").Request([]byte("pem"), certificatesv1.KubeAPIServerClientKubeletSignerName, usages...).
		Requester("system:bootstrap:abcdef", "system:bootstrappers").Build()
	same(t, got, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-1", GenerateName: "p-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: []byte("pem"), SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages: usages, Username: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers"}},
	})
}

func TestOpenShiftMachine(t *testing.T) {
	spec := &runtime.RawExtension{Raw: []byte(`{}`)}
	got := OpenShiftMachine("openshift-machine-api", "m").Labels(map[string]string{"l": "1"}).ControlledBy("ms").
		ProviderSpec(spec).ProviderID("winsim://m").Phase(machinev1.PhaseRunning).Address(corev1.NodeInternalIP, "10.0.0.7").Build()
	same(t, got, &machinev1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-machine-api", Name: "m", Labels: map[string]string{"l": "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet", Name: "ms", Controller: ptr.To(true)}}},
		Spec: machinev1.MachineSpec{ProviderSpec: machinev1.ProviderSpec{Value: spec}, ProviderID: ptr.To("winsim://m")},
		Status: machinev1.MachineStatus{Phase: ptr.To(machinev1.PhaseRunning),
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}}},
	})
}

func TestCAPIMachine(t *testing.T) {
	got := CAPIMachine("ns", "m").Cluster("c").Bootstrap("bootstrap.winnode.io", "WinnodeConfig", "m").
		Infrastructure("infrastructure.cluster.x-k8s.io", "WinsimMachine", "m").ProviderID("winsim://m").InfrastructureProvisioned().
		Address(clusterv1.MachineInternalIP, "10.0.0.8").Build()
	same(t, got, &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Labels: map[string]string{clusterv1.ClusterNameLabel: "c"}},
		Spec: clusterv1.MachineSpec{ClusterName: "c",
			Bootstrap:         clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{APIGroup: "bootstrap.winnode.io", Kind: "WinnodeConfig", Name: "m"}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "WinsimMachine", Name: "m"},
			ProviderID:        "winsim://m"},
		Status: clusterv1.MachineStatus{Addresses: clusterv1.MachineAddresses{{Type: clusterv1.MachineInternalIP, Address: "10.0.0.8"}},
			Initialization: clusterv1.MachineInitializationStatus{InfrastructureProvisioned: ptr.To(true)}},
	})
}
