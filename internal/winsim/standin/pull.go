package standin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/registries"
)

// A simulated pull resolves an image reference as containerd v2.4 does
// (core/remotes/docker resolver.go and config/hosts.go): the registry's
// hosts.toml in the registry config_path (the folder named as containerd
// names it on Windows, then the name without its colon, then _default),
// its mirrors in order, those able to resolve a tag (or pull a digest),
// then the registry itself; the first that has the manifest wins, and when
// none does, the error is the most telling one met, wrapped as the CRI
// plugin wraps it: failed to pull and unpack image "R": failed to resolve
// reference "R": ....
//
// The network is simulated in one way only: a registry (or proxy) named by
// a DNS name is on the "simulated internet", where every registry answers
// with every image and nothing is sent. A registry or proxy named by an IP
// address (or localhost) is reached for real, over HTTP: the endpoints a
// test runs (a mirror, a proxy, an unreachable address) answer with their
// own status codes and errors, so the words a pod shows are Go's and
// containerd's. TLS is not simulated: an https endpoint is reached over
// plain HTTP. The proxy is what the process's environment says (HTTP_PROXY,
// HTTPS_PROXY, NO_PROXY: the containerd service's Environment), read as Go
// reads it, as containerd does.

// containerdSim is the simulated containerd: its log and configuration.
type containerdSim struct {
	log     *logger
	runtime *containerdRuntime
}

// pull resolves image through its registry's hosts (no layer is
// downloaded, nothing is stored: every pull resolves again).
func (c *containerdSim) pull(ctx context.Context, image string) error {
	ref, err := parseReference(image)
	if err != nil {
		return fmt.Errorf("failed to pull and unpack image %q: %w", image, err)
	}
	hosts := c.registryHosts(ref.host)
	if err := c.resolve(ctx, ref, hosts); err != nil {
		return fmt.Errorf("failed to pull and unpack image %q: failed to resolve reference %q: %w", ref, ref, err)
	}
	return nil
}

// reference is a normalized image reference: docker.io/library/busybox:latest.
type reference struct {
	host, repo, tag, digest string
}

func (r reference) String() string {
	s := r.host + "/" + r.repo
	if r.tag != "" {
		s += ":" + r.tag
	}
	if r.digest != "" {
		s += "@" + r.digest
	}
	return s
}

// parseReference normalizes an image reference as containerd's CRI plugin
// does (Docker's rules: no registry is docker.io, a single name is in
// library, no tag or digest is latest).
func parseReference(image string) (reference, error) {
	var r reference
	name, digest, _ := strings.Cut(image, "@")
	r.digest = digest
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, r.tag = name[:i], name[i+1:]
	}
	first, rest, found := strings.Cut(name, "/")
	switch {
	case name == "" || strings.ContainsAny(name, " \t\\"):
		return r, fmt.Errorf("parse %q: invalid reference format", image)
	case found && (strings.ContainsAny(first, ".:") || first == "localhost"):
		r.host, r.repo = first, rest
	case found:
		r.host, r.repo = "docker.io", name
	default:
		r.host, r.repo = "docker.io", "library/"+name
	}
	if r.tag == "" && r.digest == "" {
		r.tag = "latest"
	}
	return r, nil
}

// registryHosts is what containerd tries for a registry host: its
// hosts.toml's mirrors and server, or the registry alone.
func (c *containerdSim) registryHosts(host string) plan.RegistryHosts {
	def := plan.RegistryHosts{Host: host}
	dir := c.hostsDir(host)
	if dir == "" {
		return def
	}
	data, err := os.ReadFile(filepath.Join(dir, "hosts.toml"))
	if err != nil {
		return def // no hosts.toml: containerd looks for certificate files only
	}
	r, err := registries.Lenient(host, data)
	if err != nil {
		c.log.Errorf("failed to decode %s: %v", windowsForm(filepath.Join(dir, "hosts.toml")), err)
		return def
	}
	return r
}

// hostsDir is the registry's folder in config_path, found as containerd
// on Windows finds it (config_windows.go hostPaths).
func (c *containerdSim) hostsDir(host string) string {
	if c.runtime.RegistryConfigPath == "" {
		return ""
	}
	root, err := hostPath(c.runtime.RegistryConfigPath)
	if err != nil {
		return ""
	}
	for _, name := range []string{plan.HostFolder(host), strings.ReplaceAll(host, ":", ""), plan.DefaultRegistry} {
		if fi, err := os.Stat(filepath.Join(root, name)); err == nil && fi.IsDir() {
			return filepath.Join(root, name)
		}
	}
	return ""
}

// resolve tries each host able to resolve the reference, in order.
func (c *containerdSim) resolve(ctx context.Context, ref reference, r plan.RegistryHosts) error {
	need := "resolve"
	if ref.digest != "" {
		need = "pull"
	}
	server := r.Server
	if server.URL == "" {
		server.URL = "https://" + ref.host
		if ref.host == "docker.io" {
			server.URL = "https://registry-1.docker.io"
		}
	}
	var firstErr error
	priority := 0
	tried := 0
	for _, h := range append(append([]plan.RegistryHost{}, r.Mirrors...), server) {
		if len(h.Capabilities) > 0 && !containsString(h.Capabilities, need) {
			continue
		}
		tried++
		p, err := c.head(ctx, ref, h)
		if err == nil {
			return nil
		}
		c.log.Infof("trying next host: %v", err)
		if p > priority {
			firstErr, priority = err, p
		}
	}
	if tried == 0 {
		return errors.New("no resolve hosts: not found")
	}
	return firstErr
}

// head asks one endpoint for the manifest: nil, or the error and its
// priority as containerd ranks them (transport 1, not found 2, status 3).
func (c *containerdSim) head(ctx context.Context, ref reference, h plan.RegistryHost) (int, error) {
	u, err := url.Parse(h.URL)
	if err != nil {
		return 1, err
	}
	path := strings.TrimSuffix(u.Path, "/")
	if !h.OverridePath && !strings.HasSuffix(path, "/v2") {
		path += "/v2"
	}
	object := ref.tag
	if ref.digest != "" {
		object = ref.digest
	}
	u.Path = path + "/" + ref.repo + "/manifests/" + object
	if u.Host != ref.host && !(ref.host == "docker.io" && u.Host == "registry-1.docker.io") {
		u.RawQuery = "ns=" + url.QueryEscape(ref.host)
	}
	proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u})
	if err != nil {
		return 1, fmt.Errorf("failed to do request: Head %q: %v", u.String(), err)
	}
	target := u.Hostname()
	if proxy != nil {
		target = proxy.Hostname()
	}
	if !realAddress(target) {
		c.log.Infof("HEAD %s: on the simulated internet (%s), where every registry has every image", u, target)
		return 0, nil
	}
	return c.headReal(ctx, u, proxy, h.Header)
}

// headReal sends the request to a real endpoint (TLS not simulated).
func (c *containerdSim) headReal(ctx context.Context, u *url.URL, proxy *url.URL, header map[string][]string) (int, error) {
	plain := *u
	plain.Scheme = "http"
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, plain.String(), nil)
	if err != nil {
		return 1, err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, */*")
	tr := &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return proxy, nil }}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 1, fmt.Errorf("failed to do request: Head %q: %v", u.String(), err)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return 2, fmt.Errorf("%s: not found", u.Host)
	case resp.StatusCode > 299:
		return 3, fmt.Errorf("unexpected status from HEAD request to %s: %s", u.String(), resp.Status)
	}
	return 0, nil
}

// realAddress says whether a host is reached over the real network: an IP
// address or localhost.
func realAddress(host string) bool {
	return net.ParseIP(host) != nil || strings.EqualFold(host, "localhost")
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}
