package registries

import (
	"fmt"
	"slices"
	"strings"

	"github.com/winnode/winnode/internal/plan"
)

// The registries of a Kubernetes cluster: ConfigMap windows-registries in
// the operator's namespace (docs/containers.md).
const (
	// ConfigMapName is the ConfigMap's name.
	ConfigMapName = "windows-registries"
	// AnnotationCredentials on the ConfigMap names a Secret of type
	// kubernetes.io/dockerconfigjson in the same namespace whose
	// credentials go into the hosts.toml of their registries.
	AnnotationCredentials = "winnode.io/registry-credentials"
)

// isCAFile says whether a ConfigMap key is a CA file rather than a
// registry: it ends in .crt or .pem.
func isCAFile(key string) bool {
	k := strings.ToLower(key)
	return strings.HasSuffix(k, ".crt") || strings.HasSuffix(k, ".pem")
}

// FromConfigMap reads the ConfigMap's data: each key is a registry host
// as containerd names its folder on Windows (plan.HostFolder: "quay.io",
// "myreg_5000_" for myreg:5000, "_default" for every other registry; a
// ConfigMap key cannot hold the ":" of a port) and holds that registry's
// hosts.toml; a key ending in .crt or .pem is a CA file that a hosts.toml
// names in ca. Each registry gets creds' credentials for its endpoints.
// An invalid entry is left out with an error naming its key; the others
// are returned, sorted by key.
func FromConfigMap(data map[string]string, creds Credentials) ([]plan.RegistryHosts, []error) {
	caFiles := map[string][]byte{}
	var keys []string
	for k, v := range data {
		if isCAFile(k) {
			caFiles[k] = []byte(v)
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []plan.RegistryHosts
	var errs []error
	for _, k := range keys {
		host := plan.HostOfFolder(k)
		if plan.HostFolder(host) != k {
			errs = append(errs, fmt.Errorf("key %q: not a registry host as containerd names its folder (%s)", k, plan.HostFolder(host)))
			continue
		}
		r, err := Parse(host, []byte(data[k]), caFiles)
		if err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", k, err))
			continue
		}
		r = creds.Apply(r)
		if err := plan.CheckRegistry(r); err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", k, err))
			continue
		}
		out = append(out, r)
	}
	return out, errs
}
