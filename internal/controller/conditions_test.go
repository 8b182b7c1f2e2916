package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

func TestConditionHelpers(t *testing.T) {
	wi := &winnodev1.WindowsInstance{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	if !SetCondition(wi, winnodev1.ConditionReachable, metav1.ConditionTrue, winnodev1.ReasonConnected, "ok") {
		t.Error("adding a condition reported no change")
	}
	if SetCondition(wi, winnodev1.ConditionReachable, metav1.ConditionTrue, winnodev1.ReasonConnected, "ok") {
		t.Error("setting the same condition again reported a change")
	}
	if !IsConditionTrue(wi, winnodev1.ConditionReachable) || wi.Status.Conditions[0].ObservedGeneration != 3 {
		t.Errorf("conditions %+v", wi.Status.Conditions)
	}
	before := wi.Status.Conditions[0].LastTransitionTime
	SetCondition(wi, winnodev1.ConditionReachable, metav1.ConditionTrue, winnodev1.ReasonConnected, "still ok")
	if wi.Status.Conditions[0].LastTransitionTime != before || wi.Status.Conditions[0].Message != "still ok" {
		t.Error("a message change moved the transition time or was lost")
	}
	SetCondition(wi, winnodev1.ConditionHostKeyMismatch, metav1.ConditionTrue, winnodev1.ReasonHostKeyChanged, "changed")
	if !RemoveCondition(wi, winnodev1.ConditionHostKeyMismatch) || RemoveCondition(wi, winnodev1.ConditionHostKeyMismatch) {
		t.Error("RemoveCondition did not report presence correctly")
	}
	if IsConditionTrue(wi, winnodev1.ConditionHostKeyMismatch) || len(wi.Status.Conditions) != 1 {
		t.Errorf("conditions after removal: %+v", wi.Status.Conditions)
	}
}
