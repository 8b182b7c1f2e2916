package configure

import (
	"testing"

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
