package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// SetCondition sets (adds or updates) one condition of the instance, stamped
// with the instance's generation. The transition time changes only when the
// status does (meta.SetStatusCondition). It reports whether anything changed,
// so callers can skip a status update that would change nothing.
func SetCondition(wi *winnodev1.WindowsInstance, condType string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&wi.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: wi.Generation,
	})
}

// RemoveCondition removes a condition (e.g. HostKeyMismatch once cleared);
// it reports whether it was there.
func RemoveCondition(wi *winnodev1.WindowsInstance, condType string) bool {
	return meta.RemoveStatusCondition(&wi.Status.Conditions, condType)
}

// IsConditionTrue reports whether the instance has the condition with status True.
func IsConditionTrue(wi *winnodev1.WindowsInstance, condType string) bool {
	return meta.IsStatusConditionTrue(wi.Status.Conditions, condType)
}
