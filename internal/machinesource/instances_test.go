package machinesource

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// A Machine's instance logs in as Administrator on port 22 unless the
// Machine's annotation names another account, and names the Machine as
// its source.
func TestDesired(t *testing.T) {
	obj := &unstructured.Unstructured{}
	obj.SetNamespace("capi")
	obj.SetName("win-0")
	m := Machine{Object: obj, Instance: "capi.win-0", Address: "10.0.0.7", ProviderID: "azure:///x"}
	s := &Instances{}
	got := s.desired(m)
	want := winnodev1.WindowsInstanceSpec{Address: "10.0.0.7", Username: "Administrator", Port: 22, ProviderID: "azure:///x",
		Source: winnodev1.SourceRef{Kind: winnodev1.SourceMachine, Namespace: "capi", Name: "win-0"}}
	if got != want {
		t.Errorf("desired = %+v, want %+v", got, want)
	}
	obj.SetAnnotations(map[string]string{AnnotationUsername: "capi"})
	if got := s.desired(m); got.Username != "capi" {
		t.Errorf("with annotation %s=capi the username is %q", AnnotationUsername, got.Username)
	}
	for k, v := range Labels("capi", "win-0") {
		if map[string]string{winnodev1.LabelSourceKind: "Machine", winnodev1.LabelSourceNamespace: "capi", winnodev1.LabelSourceName: "win-0"}[k] != v {
			t.Errorf("label %s=%s", k, v)
		}
	}
}
