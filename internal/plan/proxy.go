package plan

import (
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// The cluster-wide proxy reaches winnode's services through each service's
// own environment (Service.Environment, the Environment value of the
// service's registry key, which the service control manager reads at every
// start of the service). The Windows Machine Config Operator sets the
// proxy variables machine-wide instead (the system environment, read by a
// process when it is created from a fresh environment block), which only
// services.exe started after a reboot sees: every proxy change there costs
// a reboot of the host. Per service, a change costs a restart of the
// services, and nothing else on the host (an administrator's own programs,
// other services) is sent through the cluster's proxy.

// ProxyFacts are the cluster-wide proxy: OpenShift's
// proxy.config.openshift.io/cluster status, or the operator's own
// HTTP_PROXY, HTTPS_PROXY and NO_PROXY on Kubernetes.
type ProxyFacts struct {
	HTTPProxy  string
	HTTPSProxy string
	// NoProxy is the cluster's list, comma-separated; the renderer adds the
	// node's own names and addresses and the cluster's networks.
	NoProxy string
}

// set says whether a proxy is configured.
func (p ProxyFacts) set() bool { return p.HTTPProxy != "" || p.HTTPSProxy != "" }

// check refuses proxy URLs Go's proxy support cannot read.
func (p ProxyFacts) check() []error {
	var errs []error
	for name, v := range map[string]string{"HTTP_PROXY": p.HTTPProxy, "HTTPS_PROXY": p.HTTPSProxy} {
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
			errs = append(errs, fmt.Errorf("proxy %s %q is not an http, https or socks5 URL", name, redactURL(v)))
		}
	}
	if strings.ContainsAny(p.NoProxy, "\x00\r\n") {
		errs = append(errs, fmt.Errorf("NO_PROXY spans lines"))
	}
	return errs
}

// redactURL leaves a URL's password out of an error message.
func redactURL(v string) string {
	if u, err := url.Parse(v); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// proxyEnvironment is a service's environment: extra, plus the proxy
// variables when the cluster has a proxy. Windows' environment names are
// case-insensitive, so only the upper-case names are set.
func (in RenderInput) proxyEnvironment(extra map[string]string) map[string]string {
	if !in.Proxy.set() && len(extra) == 0 {
		return nil
	}
	env := maps.Clone(extra)
	if env == nil {
		env = map[string]string{}
	}
	if !in.Proxy.set() {
		return env
	}
	if in.Proxy.HTTPProxy != "" {
		env["HTTP_PROXY"] = in.Proxy.HTTPProxy
	}
	if in.Proxy.HTTPSProxy != "" {
		env["HTTPS_PROXY"] = in.Proxy.HTTPSProxy
	}
	env["NO_PROXY"] = in.noProxy()
	return env
}

// noProxy is the cluster's NO_PROXY list with what must never go through
// the proxy: this node's names and addresses, the cluster's networks (pods
// and Services, which Go's proxy support matches as CIDRs), the cluster's
// own DNS names and the loopback. Sorted and without duplicates, so that
// the same facts give the same environment.
func (in RenderInput) noProxy() string {
	var list []string
	for _, e := range strings.Split(in.Proxy.NoProxy, ",") {
		list = append(list, strings.TrimSpace(e))
	}
	info := in.Host.Info
	list = append(list, "localhost", "127.0.0.1", NodeName(info.Hostname), strings.ToLower(info.FQDN))
	list = append(list, info.IPv4...)
	for _, cidr := range []string{in.Network.ClusterCIDR, in.Network.ServiceCIDR} {
		if p, err := netip.ParsePrefix(cidr); err == nil {
			list = append(list, p.Masked().String())
		}
	}
	domain := in.Cluster.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	list = append(list, ".svc", "."+domain)
	seen := map[string]bool{}
	var out []string
	for _, e := range list {
		if e == "" || seen[strings.ToLower(e)] {
			continue
		}
		seen[strings.ToLower(e)] = true
		out = append(out, e)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
