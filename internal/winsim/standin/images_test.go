package standin

import (
	"strings"
	"testing"
)

func TestImageBuild(t *testing.T) {
	for image, want := range map[string]string{
		"mcr.microsoft.com/windows/servercore:ltsc2022":                       "10.0.20348",
		"mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019": "10.0.17763",
		"mcr.microsoft.com/windows/nanoserver:1809-amd64":                     "10.0.17763",
		"mcr.microsoft.com/windows/servercore:ltsc2025@sha256:0123":           "10.0.26100",
		"registry.example:5000/team/app:ltsc2022":                             "10.0.20348",
		"registry.example:5000/team/app":                                      "", // the port is no tag
		"mcr.microsoft.com/windows/servercore/iis":                            "",
		"example.com/app:v1.2.3":                                              "",
		"example.com/ltsc2022/app:v1":                                         "", // only the tag counts
		"example.com/app:18090":                                               "",
	} {
		if got := imageBuild(image); got != want {
			t.Errorf("imageBuild(%q) = %q, want %q", image, got, want)
		}
	}
}

func TestImageMismatch(t *testing.T) {
	const host2019 = "10.0.17763"
	msg := imageMismatch("mcr.microsoft.com/windows/servercore:ltsc2022", host2019)
	for _, want := range []string{"no match for platform in manifest", "a Windows version 10.0.20348-based image is incompatible with a 10.0.17763 host", "servercore:ltsc2022"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	for _, ok := range []string{"mcr.microsoft.com/windows/servercore:ltsc2019", "mcr.microsoft.com/windows/servercore:1809", "example.com/app:latest"} {
		if msg := imageMismatch(ok, host2019); msg != "" {
			t.Errorf("%s on a 2019 host: %q, want it to run", ok, msg)
		}
	}
}

// FuzzImageBuild: any image reference (a pod's spec is outside input) gives
// one of the known builds or none, without panicking.
func FuzzImageBuild(f *testing.F) {
	for _, s := range []string{"a:ltsc2022", "x/y:1809-amd64@sha256:00", ":", "@", "a:b:c/d:ltsc2025", ""} {
		f.Add(s)
	}
	known := map[string]bool{"": true}
	for _, b := range imageBuilds {
		known[b] = true
	}
	f.Fuzz(func(t *testing.T, image string) {
		if b := imageBuild(image); !known[b] {
			t.Fatalf("imageBuild(%q) = %q, not a known build", image, b)
		}
	})
}
