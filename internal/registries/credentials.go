package registries

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/winnode/winnode/internal/plan"
)

// Credentials are registry credentials by registry host, read from a
// Docker config (a kubernetes.io/dockerconfigjson Secret's
// .dockerconfigjson, or OpenShift's pull secret).
type Credentials map[string]string // host -> base64 "user:password"

// dockerConfig is the part of a Docker config.json winnode reads.
type dockerConfig struct {
	Auths map[string]struct {
		Auth     string `json:"auth"`
		Username string `json:"username"`
		Password string `json:"password"`
	} `json:"auths"`
}

// ParseCredentials reads a Docker config. An entry's key may be a host
// ("quay.io", "myreg:5000"), a URL ("https://index.docker.io/v1/") or a
// host and repository path: credentials go by host, the first key of a
// host winning (keys are read sorted, so the choice is stable).
func ParseCredentials(data []byte) (Credentials, error) {
	var c dockerConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("not a Docker config (.dockerconfigjson): %v", err)
	}
	out := Credentials{}
	keys := make([]string, 0, len(c.Auths))
	for k := range c.Auths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := c.Auths[k]
		auth := a.Auth
		if auth == "" && a.Username != "" {
			auth = base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password))
		}
		if auth == "" {
			continue
		}
		if _, err := base64.StdEncoding.DecodeString(auth); err != nil {
			return nil, fmt.Errorf("the credentials of %q are not base64", k)
		}
		host := credentialHost(k)
		if _, ok := out[host]; !ok && host != "" {
			out[host] = auth
		}
	}
	return out, nil
}

// credentialHost is the registry host a Docker config key stands for.
func credentialHost(key string) string {
	k := key
	if strings.Contains(k, "://") {
		if u, err := url.Parse(k); err == nil {
			k = u.Host
		}
	}
	k, _, _ = strings.Cut(k, "/")
	switch strings.ToLower(k) {
	case "index.docker.io", "registry-1.docker.io":
		return "docker.io"
	}
	return strings.ToLower(k)
}

// authorization is the Basic authorization header for an endpoint URL's
// host, when there are credentials for it.
func (c Credentials) authorization(endpoint string) (string, bool) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false
	}
	auth, ok := c[credentialHost(u.Host)]
	if !ok {
		return "", false
	}
	return "Basic " + auth, true
}

// Apply sends each endpoint of r the credentials of its host as an
// authorization header (as the Windows Machine Config Operator does with
// OpenShift's pull secret), unless the endpoint has one already. The
// registry itself (an empty server URL) gets those of r.Host.
func (c Credentials) Apply(r plan.RegistryHosts) plan.RegistryHosts {
	add := func(h plan.RegistryHost, url string) plan.RegistryHost {
		auth, ok := c.authorization(url)
		if !ok || hasHeader(h.Header, "authorization") {
			return h
		}
		header := map[string][]string{}
		for k, v := range h.Header {
			header[k] = v
		}
		header["authorization"] = []string{auth}
		h.Header = header
		return h
	}
	serverURL := r.Server.URL
	if serverURL == "" && r.Host != plan.DefaultRegistry {
		serverURL = "https://" + r.Host
	}
	if serverURL != "" {
		r.Server = add(r.Server, serverURL)
	}
	mirrors := make([]plan.RegistryHost, len(r.Mirrors))
	for i, m := range r.Mirrors {
		mirrors[i] = add(m, m.URL)
	}
	r.Mirrors = mirrors
	return r
}

func hasHeader(h map[string][]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
