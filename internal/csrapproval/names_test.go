package csrapproval

import (
	"net/netip"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// TestServingNames: a serving certificate names only what the host is, by
// the administrator's word (spec.address, --node-address-cidrs) and its
// validated node name and FQDN; never a Service's name or IP, never
// another Node's address, whatever the host reports.
func TestServingNames(t *testing.T) {
	wi := *builder.Instance("wi-1").Host("10.0.0.5", "").Node("win-host1", "").
		// What the host reports: its own, a Service IP, another node's,
		// loopback and the metadata service.
		Reported("WIN-HOST1", "win-host1.corp.example.com", "10.0.0.5", "192.168.7.5", "10.96.0.1", "10.0.0.9", "127.0.0.1", "169.254.169.254").
		Build()
	badFQDN := wi
	badFQDN.Status.FQDN = "kubernetes.default.svc.cluster.local"
	invalidFQDN := wi
	invalidFQDN.Status.FQDN = "win_host1.corp"
	kubernetesNode := wi
	kubernetesNode.Status.NodeName = "kubernetes"
	otherNodes := map[netip.Addr]string{netip.MustParseAddr("10.0.0.9"): "control-plane-1", netip.MustParseAddr("10.0.0.5"): "win-host1"}
	defaults := DefaultPolicy()
	allow192 := DefaultPolicy()
	allow192.NodeAddressCIDRs = []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}
	allowAll := DefaultPolicy()
	allowAll.NodeAddressCIDRs = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}
	otherDomain := DefaultPolicy()
	otherDomain.ClusterDomain = "k8s.corp"

	cases := []struct {
		name   string
		wi     winnodev1.WindowsInstance
		policy Policy
		dns    []string
		ips    []string
		want   string // "" approves
	}{
		{"spec.address and node name", wi, defaults, []string{"win-host1"}, []string{"10.0.0.5"}, ""},
		{"FQDN and hostname in any case", wi, defaults, []string{"WIN-HOST1", "win-host1.corp.example.com."}, nil, ""},
		{"reported address, no CIDR allowed", wi, defaults, nil, []string{"192.168.7.5"}, "outside the allowed node address CIDRs"},
		{"reported address inside an allowed CIDR", wi, allow192, nil, []string{"10.0.0.5", "192.168.7.5"}, ""},
		{"address the host does not report", wi, allowAll, nil, []string{"192.168.7.6"}, "is not an address of WindowsInstance wi-1's host"},
		{"Service IP the host reports", wi, allowAll, nil, []string{"10.96.0.1"}, "in the Service range"},
		{"Service IP, other Service range", wi, func() Policy {
			p := allowAll
			p.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("172.30.0.0/16")}
			return p
		}(), nil, []string{"172.30.0.1"}, "in the Service range"},
		{"another Node's address the host reports", wi, allowAll, nil, []string{"10.0.0.9"}, "an address of Node control-plane-1"},
		{"kubernetes.default.svc", wi, defaults, []string{"win-host1", "kubernetes.default.svc"}, nil, "service domain"},
		{"kubernetes.default.svc.cluster.local", wi, defaults, []string{"kubernetes.default.svc.cluster.local"}, nil, "service domain"},
		{"kubernetes", wi, defaults, []string{"kubernetes"}, nil, "service domain"},
		{"kubernetes.default", wi, defaults, []string{"KUBERNETES.default"}, nil, "service domain"},
		{"a Service in another namespace", wi, defaults, []string{"vault.secrets.svc"}, nil, "service domain"},
		{"a name in a custom cluster domain", wi, otherDomain, []string{"api.k8s.corp"}, nil, "service domain"},
		{"FQDN in the service domain", badFQDN, defaults, []string{"kubernetes.default.svc.cluster.local"}, nil, "service domain"},
		{"FQDN that is no DNS-1123 name", invalidFQDN, defaults, []string{"win_host1.corp"}, nil, "is not a name of WindowsInstance"},
		{"node named kubernetes", kubernetesNode, defaults, []string{"kubernetes"}, nil, "service domain"},
		{"another host's name", wi, defaults, []string{"win-host2"}, nil, "is not a name of WindowsInstance"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl := csrTemplate{CN: "system:node:" + c.wi.Status.NodeName, O: []string{"system:nodes"}, DNS: c.dns, IPs: c.ips}
			csr := builder.CSR("").Request(makeCSRPEM(t, tmpl), certificatesv1.KubeletServingSignerName, servingUsages...).
				Requester(tmpl.CN, "system:nodes").Build()
			facts := Facts{Policy: c.policy, NodeOfAddress: func(ip netip.Addr) string { return otherNodes[ip] }}
			d := Decide(csr, []winnodev1.WindowsInstance{c.wi}, facts)
			if c.want == "" {
				if !d.Approve {
					t.Fatalf("left alone (%s), want approved", d.Reason)
				}
				return
			}
			if d.Approve || !strings.Contains(d.Reason, c.want) {
				t.Fatalf("approve %v, reason %q; want left alone because %q", d.Approve, d.Reason, c.want)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	got, err := ParseCIDRs("node-address-cidrs", " 10.1.0.7/16, fd00::/8,")
	if err != nil || len(got) != 2 || got[0].String() != "10.1.0.0/16" || got[1].String() != "fd00::/8" {
		t.Fatalf("ParseCIDRs = %v, %v", got, err)
	}
	if _, err := ParseCIDRs("node-address-cidrs", "10.0.0.1"); err == nil || !strings.Contains(err.Error(), "--node-address-cidrs") {
		t.Fatalf("a bare IP: err %v, want one naming the flag", err)
	}
}

// TestPolicyFromFlags: the flags' defaults are kubeadm's Service range and
// no node address CIDRs; an explicit Service range replaces the default.
func TestPolicyFromFlags(t *testing.T) {
	p, err := PolicyFromFlags("", "")
	if err != nil || len(p.NodeAddressCIDRs) != 0 || len(p.ServiceCIDRs) != 1 || p.ServiceCIDRs[0].String() != DefaultServiceCIDR {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	p, err = PolicyFromFlags("10.0.0.0/8", "172.30.0.0/16")
	if err != nil || len(p.ServiceCIDRs) != 1 || p.ServiceCIDRs[0].String() != "172.30.0.0/16" || len(p.NodeAddressCIDRs) != 1 {
		t.Fatalf("explicit: %+v, %v", p, err)
	}
}
