package configure

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

func TestSetCondition(t *testing.T) {
	wi := builder.Instance("").Generation(3).Build()
	SetCondition(wi, winnodev1.ConditionReachable, metav1.ConditionTrue, winnodev1.ReasonConnected, "ok")
	if !meta.IsStatusConditionTrue(wi.Status.Conditions, winnodev1.ConditionReachable) || wi.Status.Conditions[0].ObservedGeneration != 3 {
		t.Errorf("conditions %+v", wi.Status.Conditions)
	}
	before := wi.Status.Conditions[0].LastTransitionTime
	SetCondition(wi, winnodev1.ConditionReachable, metav1.ConditionTrue, winnodev1.ReasonConnected, "still ok")
	if wi.Status.Conditions[0].LastTransitionTime != before || wi.Status.Conditions[0].Message != "still ok" {
		t.Error("a message change moved the transition time or was lost")
	}
	SetCondition(wi, winnodev1.ConditionReachable, metav1.ConditionFalse, winnodev1.ReasonUnreachable, strings.Repeat("x", 5000))
	if c := wi.Status.Conditions[0]; len(c.Message) > 1010 || c.Status != metav1.ConditionFalse || len(wi.Status.Conditions) != 1 {
		t.Errorf("a long message is not bounded, or the condition was not updated in place: %d bytes, %+v", len(c.Message), c.Status)
	}
}
