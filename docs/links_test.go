package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The documents whose links are checked, relative to this folder.
var documents = []string{
	"*.md",
	"../config/samples/README.md",
	"../hack/payload/README.md",
}

var (
	linkRe    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRe = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)
	fenceRe   = regexp.MustCompile("(?ms)^```.*?^```")
)

// slug is the anchor GitHub gives a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces turned into '-'.
func slug(heading string) string {
	heading = strings.ReplaceAll(heading, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range headingRe.FindAllStringSubmatch(fenceRe.ReplaceAllString(string(data), ""), -1) {
		out[slug(m[1])] = true
	}
	return out
}

func TestLinksResolve(t *testing.T) {
	var files []string
	for _, pattern := range documents {
		matches, err := filepath.Glob(pattern)
		if err != nil || len(matches) == 0 {
			t.Fatalf("no documents match %s", pattern)
		}
		files = append(files, matches...)
	}
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := fenceRe.ReplaceAllString(string(data), "")
		for _, m := range linkRe.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s: link %s: %s does not exist", file, target, resolved)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(resolved, ".md") && !anchors(t, resolved)[anchor] {
				t.Errorf("%s: link %s: %s has no heading with anchor #%s", file, target, resolved, anchor)
			}
		}
	}
	if checked < 15 {
		t.Fatalf("checked only %d links; the scan is broken", checked)
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"3. Give the operator its SSH key":                     "3-give-the-operator-its-ssh-key",
		"2. SSH with the operator's key: the user data script": "2-ssh-with-the-operators-key-the-user-data-script",
		"The `windows-instances` ConfigMap":                    "the-windows-instances-configmap",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
