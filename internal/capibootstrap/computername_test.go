package capibootstrap

import (
	"fmt"
	"strings"
	"testing"
)

func TestComputerNameExamples(t *testing.T) {
	for _, tc := range []struct {
		namespace, machine, prefix string
		attempt                    int
		want                       string
	}{
		// The readable part is the Machine name's first 8 characters.
		{"default", "win-md-0-7d9f8c6b5-x2vzq", "", 0, "win-md-0-"},
		// A prefix replaces it.
		{"default", "win-md-0-7d9f8c6b5-x2vzq", "web", 0, "web-"},
		// Dots and other characters become hyphens; ends are trimmed.
		{"default", "a.b_c", "", 0, "a-b-c-"},
		{"default", "-x", "", 0, "x-"},
		// Upper-case prefixes are lowered.
		{"default", "m", "IIS01", 0, "iis01-"},
	} {
		got := ComputerName(tc.namespace, tc.machine, tc.prefix, tc.attempt)
		if !strings.HasPrefix(got, tc.want) || len(got) != len(tc.want)+hashLen {
			t.Errorf("ComputerName(%q, %q, %q, %d) = %q, want %q and %d hash characters", tc.namespace, tc.machine, tc.prefix, tc.attempt, got, tc.want, hashLen)
		}
		if err := CheckComputerName(got); err != nil {
			t.Error(err)
		}
	}
}

// The same input always gives the same name; the namespace and the attempt
// change it.
func TestComputerNameIsDeterministic(t *testing.T) {
	a := ComputerName("ns", "machine-1", "", 0)
	if b := ComputerName("ns", "machine-1", "", 0); a != b {
		t.Fatalf("two calls gave %q and %q", a, b)
	}
	for _, other := range []string{ComputerName("ns2", "machine-1", "", 0), ComputerName("ns", "machine-1", "", 1)} {
		if other == a {
			t.Errorf("another namespace or attempt gave the same name %q", a)
		}
	}
}

// Long Machine names of one MachineDeployment share their first characters:
// their computer names must still differ, and fit in 15.
func TestComputerNamesOfLongSiblingMachinesDiffer(t *testing.T) {
	seen := map[string]string{}
	for i := range 5000 {
		machine := fmt.Sprintf("windows-workers-md-0-5f7c9d8b4-%05d", i)
		n := ComputerName("capi-clusters", machine, "", 0)
		if len(n) > MaxComputerName {
			t.Fatalf("%s: %q is %d characters", machine, n, len(n))
		}
		if prev, dup := seen[n]; dup {
			t.Fatalf("%s and %s both got %q", prev, machine, n)
		}
		seen[n] = machine
	}
}

func TestCheckComputerName(t *testing.T) {
	for _, ok := range []string{"a", "win-abc123", "A1-B2", "123456789012345"[:14] + "x"} {
		if err := CheckComputerName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1234", "-a", "a-", "a_b", "a.b", "abcdefghijklmnop", "a b", "é"} {
		if err := CheckComputerName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzComputerName: whatever the Machine's name and prefix, the name is
// valid (CheckComputerName: at most 15 letters, digits and hyphens, no
// hyphen at either end, not digits only) and a prefix that passes
// validation is kept.
func FuzzComputerName(f *testing.F) {
	for _, s := range [][2]string{{"win-md-0-abc", ""}, {"a.b", "web"}, {"", ""}, {"---", "-"}, {"ÄÖÜ", "x_y"}, {"1234567890123456", "12345678"}} {
		f.Add("default", s[0], s[1], 0)
	}
	f.Fuzz(func(t *testing.T, namespace, machine, prefix string, attempt int) {
		if attempt < 0 || attempt >= maxAttempts {
			attempt = 0
		}
		n := ComputerName(namespace, machine, prefix, attempt)
		// A sibling Machine (same prefix, same first characters) gets
		// another name: only the 30-bit hash tells them apart.
		if sibling := ComputerName(namespace, machine+"-1", prefix, attempt); sibling == n {
			t.Fatalf("Machines %q and %q both got %q", machine, machine+"-1", n)
		}
		if prefix != "" && checkNameChars(prefix, MaxComputerNamePrefix) == nil {
			if !strings.HasPrefix(n, strings.ToLower(prefix)+"-") {
				t.Fatalf("valid prefix %q not kept: %q", prefix, n)
			}
			if err := CheckComputerName(n); err != nil {
				t.Fatal(err)
			}
			return
		}
		if prefix == "" {
			if err := CheckComputerName(n); err != nil {
				t.Fatalf("Machine %q: %v", machine, err)
			}
		}
	})
}
