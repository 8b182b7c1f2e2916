package registries

import (
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/winnode/winnode/internal/plan"
)

// FromMirrorSets turns OpenShift's ImageDigestMirrorSets and
// ImageTagMirrorSets into one hosts.toml per source registry, as the
// Windows Machine Config Operator does (pkg/registries):
//
//   - a digest mirror may only pull (by digest); a tag mirror may also
//     resolve tags; a mirror listed by both may do both;
//   - mirrors are tried in the order the sets list them (sets by name),
//     then the source, unless an entry says NeverContactSource: the
//     source's server is then its first mirror, so that the source is
//     never contacted even when every mirror fails;
//   - containerd appends an image's repository path to a mirror's URL, so
//     a mirror with an organisation path (mirror.example.com/org/ocp for
//     source quay.io/ocp) becomes https://mirror.example.com/org: the part
//     of the mirror before the source's repository path.
//
// containerd configures mirrors per registry host, not per repository: a
// source with a repository path gives its mirrors to every image of its
// host, which then falls back to the host when a mirror lacks the image.
// A mirror whose path does not end with its source's repository path
// cannot be written so (containerd would ask it for another path); it is
// left out, with a warning naming it.
func FromMirrorSets(idms []configv1.ImageDigestMirrorSet, itms []configv1.ImageTagMirrorSet, creds Credentials) ([]plan.RegistryHosts, []string) {
	b := newMirrorBuilder()
	slices.SortFunc(idms, func(a, b configv1.ImageDigestMirrorSet) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(itms, func(a, b configv1.ImageTagMirrorSet) int { return strings.Compare(a.Name, b.Name) })
	for _, set := range idms {
		for _, e := range set.Spec.ImageDigestMirrors {
			b.add("ImageDigestMirrorSet "+set.Name, e.Source, mirrorStrings(e.Mirrors), e.MirrorSourcePolicy, false)
		}
	}
	for _, set := range itms {
		for _, e := range set.Spec.ImageTagMirrors {
			b.add("ImageTagMirrorSet "+set.Name, e.Source, mirrorStrings(e.Mirrors), e.MirrorSourcePolicy, true)
		}
	}
	return b.build(creds), b.warnings
}

func mirrorStrings(ms []configv1.ImageMirror) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

// mirrorBuilder merges the mirror sets' entries per source host.
type mirrorBuilder struct {
	hosts    []string // in order of first appearance
	mirrors  map[string][]mirror
	never    map[string]bool
	warnings []string
}

// mirror is one mirror of a source host.
type mirror struct {
	url     string
	resolve bool
}

func newMirrorBuilder() *mirrorBuilder {
	return &mirrorBuilder{mirrors: map[string][]mirror{}, never: map[string]bool{}}
}

// add merges one entry: the source's mirrors, whether they may resolve
// tags, and its source policy.
func (b *mirrorBuilder) add(from, source string, mirrors []string, policy configv1.MirrorSourcePolicy, resolve bool) {
	host, path := splitRepository(source)
	if host == "" {
		b.warnings = append(b.warnings, fmt.Sprintf("%s: source %q names no registry host; left out", from, source))
		return
	}
	if _, ok := b.mirrors[host]; !ok {
		b.hosts = append(b.hosts, host)
		b.mirrors[host] = nil
	}
	if policy == configv1.NeverContactSource {
		b.never[host] = true
	}
	for _, m := range mirrors {
		url, ok := mirrorURL(path, m)
		if !ok {
			b.warnings = append(b.warnings, fmt.Sprintf("%s: mirror %s of %s: containerd appends the image's repository path to a mirror, so the mirror's path must end with %q; left out", from, m, source, path))
			continue
		}
		b.merge(host, mirror{url: url, resolve: resolve})
	}
}

// merge adds a mirror once; a mirror that may resolve tags in one entry
// may in all.
func (b *mirrorBuilder) merge(host string, m mirror) {
	for i, have := range b.mirrors[host] {
		if have.url == m.url {
			b.mirrors[host][i].resolve = have.resolve || m.resolve
			return
		}
	}
	b.mirrors[host] = append(b.mirrors[host], m)
}

// build makes each source host's configuration, sorted by host.
func (b *mirrorBuilder) build(creds Credentials) []plan.RegistryHosts {
	hosts := slices.Clone(b.hosts)
	slices.Sort(hosts)
	var out []plan.RegistryHosts
	for _, host := range hosts {
		ms := b.mirrors[host]
		if len(ms) == 0 {
			continue
		}
		r := plan.RegistryHosts{Host: host}
		for _, m := range ms {
			r.Mirrors = append(r.Mirrors, plan.RegistryHost{URL: m.url, Capabilities: m.capabilities(), OverridePath: overridePath(m.url)})
		}
		if b.never[host] {
			r.Server = plan.RegistryHost{URL: ms[0].url, Capabilities: ms[0].capabilities(), OverridePath: overridePath(ms[0].url)}
		}
		out = append(out, creds.Apply(r))
	}
	return out
}

func (m mirror) capabilities() []string {
	if m.resolve {
		return []string{"pull", "resolve"}
	}
	return []string{"pull"}
}

// splitRepository splits "quay.io/org/repo" into its registry host and
// repository path. A first component without a dot or a colon that is
// not localhost is a Docker Hub repository ("library/busybox"), as image
// references read it.
func splitRepository(source string) (host, path string) {
	first, rest, _ := strings.Cut(strings.Trim(source, "/"), "/")
	if first == "" {
		return "", ""
	}
	if !strings.ContainsAny(first, ".:") && first != "localhost" {
		return "docker.io", strings.Trim(source, "/")
	}
	return strings.ToLower(first), rest
}

// mirrorURL is the URL containerd must be given for a mirror of a source
// whose repository path is sourcePath: the mirror without that path.
func mirrorURL(sourcePath, m string) (string, bool) {
	// A mirror always names its host first (OpenShift's API requires it).
	host, mpath, _ := strings.Cut(strings.Trim(m, "/"), "/")
	host = strings.ToLower(host)
	switch {
	case sourcePath == "":
	case mpath == sourcePath:
		mpath = ""
	case strings.HasSuffix(mpath, "/"+sourcePath):
		mpath = strings.TrimSuffix(mpath, "/"+sourcePath)
	default:
		return "", false
	}
	u := "https://" + host
	if mpath != "" {
		// An organisation's path goes after the API root: containerd
		// appends /v2 to a host's path unless override_path, so the
		// mirror is written with its /v2 and override_path (containerd's
		// docs/hosts.md, "override_path"), as the Windows Machine Config
		// Operator writes it.
		u += "/v2/" + mpath
	}
	return u, true
}

// overridePath says whether a mirror URL of mirrorURL names the API root
// itself (an organisation's path after /v2).
func overridePath(url string) bool {
	return strings.Contains(strings.TrimPrefix(url, "https://"), "/")
}
