package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// A name of any length an object may have is a valid label value, and
// distinct names stay distinct.
func TestLabelValue(t *testing.T) {
	long := strings.Repeat("machine-", 30) + "x" // 241 characters
	for _, c := range []struct {
		name string
		want string // "" when hashed
	}{
		{"wi-1", "wi-1"},
		{strings.Repeat("a", 63), strings.Repeat("a", 63)},
		{strings.Repeat("a", 64), ""},
		{long, ""},
		{"capi-clusters." + long, ""},
	} {
		got := LabelValue(c.name)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("LabelValue(%q) = %q: not a label value: %v", c.name, got, errs)
		}
		if c.want != "" && got != c.want {
			t.Errorf("LabelValue(%q) = %q, want the name itself", c.name, got)
		}
		if c.want == "" && (len(got) != 63 || !strings.HasPrefix(c.name, got[:50])) {
			t.Errorf("LabelValue(%q) = %q, want 52 characters of the name and a hash", c.name, got)
		}
	}
	if LabelValue(long+"a") == LabelValue(long+"b") {
		t.Error("two long names that differ only at their end have one label value")
	}
	// A cut that ends on a dash still ends a label value on a letter.
	if got := LabelValue(strings.Repeat("a", 51) + "-" + strings.Repeat("b", 20)); !strings.HasSuffix(got[:51], "a") || strings.Contains(got, "--") {
		t.Errorf("a cut at a dash: %q", got)
	}
}
