package configure

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/hosttext"
)

// SetCondition sets (adds or updates) one condition of the instance, stamped
// with the instance's generation, its message cleaned of control
// characters (it may quote the host: hosttext) and bounded to 1000 bytes.
// The transition time changes only when the status does
// (meta.SetStatusCondition).
func SetCondition(inst *winnodev1.WindowsInstance, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&inst.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: truncate(hosttext.Clean(message), 1000),
		ObservedGeneration: inst.Generation,
	})
}

// removeCondition drops a condition that no longer applies.
func removeCondition(inst *winnodev1.WindowsInstance, typ string) {
	meta.RemoveStatusCondition(&inst.Status.Conditions, typ)
}
