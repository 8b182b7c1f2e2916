package configure

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

func TestOnlyApprovalRecorded(t *testing.T) {
	record := &winnodev1.ClientCertificate{CSRName: "csr-1", CSRUID: "uid-1", NodeName: "win-a"}
	other := &winnodev1.ClientCertificate{CSRName: "csr-2", CSRUID: "uid-2", NodeName: "win-a"}
	saved := winnodev1.WindowsInstanceStatus{Phase: winnodev1.PhaseConfiguring, Step: StepApply, HostKey: "ssh-ed25519 AAAA"}
	with := func(f func(*winnodev1.WindowsInstanceStatus)) winnodev1.WindowsInstanceStatus {
		s := *saved.DeepCopy()
		f(&s)
		return s
	}
	ours := with(func(s *winnodev1.WindowsInstanceStatus) { s.Step = StepJoin })
	cases := []struct {
		name          string
		saved, stored winnodev1.WindowsInstanceStatus
		ours          winnodev1.WindowsInstanceStatus
		want          bool
	}{
		{"the approver recorded a first certificate", saved, with(func(s *winnodev1.WindowsInstanceStatus) { s.ClientCertificate = record }), ours, true},
		{"the approver replaced its record", with(func(s *winnodev1.WindowsInstanceStatus) { s.ClientCertificate = record }),
			with(func(s *winnodev1.WindowsInstanceStatus) { s.ClientCertificate = other }),
			with(func(s *winnodev1.WindowsInstanceStatus) { s.Step = StepJoin; s.ClientCertificate = record }), true},
		{"nothing changed in the status (a metadata write)", saved, saved, ours, true},
		{"an administrator cleared the pinned host key", saved, with(func(s *winnodev1.WindowsInstanceStatus) { s.HostKey = "" }), ours, false},
		{"the record and the host key changed", saved, with(func(s *winnodev1.WindowsInstanceStatus) { s.ClientCertificate = record; s.HostKey = "" }), ours, false},
		{"another pass moved the step", saved, with(func(s *winnodev1.WindowsInstanceStatus) { s.Step = StepFinish }), ours, false},
		{"this pass changed the record itself", saved, with(func(s *winnodev1.WindowsInstanceStatus) { s.ClientCertificate = record }),
			with(func(s *winnodev1.WindowsInstanceStatus) { s.Step = StepJoin; s.ClientCertificate = other }), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlyApprovalRecorded(tc.saved, tc.stored, tc.ours); got != tc.want {
				t.Errorf("onlyApprovalRecorded = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSaveOverApproval: a save that meets a conflict saves again on the
// stored instance when the approver's record is all that changed, keeping
// the record; otherwise the conflict is the save's error.
func TestSaveOverApproval(t *testing.T) {
	record := &winnodev1.ClientCertificate{CSRName: "csr-1", CSRUID: "uid-1", NodeName: "win-a"}
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "winnode.io", Resource: "windowsinstances"}, "a", errors.New("the object has been modified"))
	for _, tc := range []struct {
		name     string
		stored   func(*winnodev1.WindowsInstance)
		wantSave bool
	}{
		{"the approver's record", func(s *winnodev1.WindowsInstance) { s.Status.ClientCertificate = record }, true},
		{"the pinned host key cleared", func(s *winnodev1.WindowsInstance) { s.Status.HostKey = "" }, false},
		{"a new generation", func(s *winnodev1.WindowsInstance) { s.Status.ClientCertificate = record; s.Generation++ }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &winnodev1.WindowsInstance{}
			inst.Name, inst.Generation, inst.ResourceVersion = "a", 1, "10"
			inst.Status = winnodev1.WindowsInstanceStatus{Phase: winnodev1.PhaseConfiguring, Step: StepApply, HostKey: "ssh-ed25519 AAAA"}
			stored := inst.DeepCopy()
			stored.ResourceVersion = "11"
			tc.stored(stored)
			var saves []winnodev1.WindowsInstance
			c := &Configurer{Log: logr.Discard(),
				Persist: func(_ context.Context, in *winnodev1.WindowsInstance) error {
					if in.ResourceVersion != stored.ResourceVersion {
						return conflict
					}
					saves = append(saves, *in.DeepCopy())
					return nil
				},
				Reload: func(context.Context, *winnodev1.WindowsInstance) (*winnodev1.WindowsInstance, error) {
					return stored.DeepCopy(), nil
				},
			}
			c.Persisted(inst)
			inst.Status.Step = StepJoin
			err := c.save(context.Background(), inst)
			if !tc.wantSave {
				if !apierrors.IsConflict(err) || len(saves) != 0 {
					t.Fatalf("save = %v after %d saves; want the conflict and no save", err, len(saves))
				}
				return
			}
			if err != nil || len(saves) != 1 {
				t.Fatalf("save = %v after %d saves; want one save", err, len(saves))
			}
			if got := saves[0]; got.Status.Step != StepJoin || got.Status.ClientCertificate == nil || got.Status.ClientCertificate.CSRName != "csr-1" || got.Status.HostKey != "ssh-ed25519 AAAA" {
				t.Errorf("saved status %+v; want step join, the approver's record and the host key kept", got.Status)
			}
		})
	}
}
