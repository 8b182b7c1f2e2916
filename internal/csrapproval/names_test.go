package csrapproval

import (
	"net/netip"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// TestServingNames: a serving certificate names only what can be
// attributed to the host: its node name, the DNS names a cloud controller
// manager gave its Node, <node name>.<domain> for the administrator's
// --node-dns-domains, spec.address and the addresses the administrator
// allows; never a Service's name or IP, a name or address of the API
// server's certificate, another Node's name or address, whatever the host
// reports (its FQDN included).
func TestServingNames(t *testing.T) {
	wi := *builder.Instance("wi-1").Host("10.0.0.5", "").Node("win-host1", "").
		// What the host reports: its own, a Service IP, another node's,
		// loopback and the metadata service.
		Reported("WIN-HOST1", "win-host1.corp.example.com", "10.0.0.5", "192.168.7.5", "10.96.0.1", "10.0.0.9", "127.0.0.1", "169.254.169.254").
		Build()
	badFQDN := wi
	badFQDN.Status.FQDN = "kubernetes.default.svc.cluster.local"
	apiFQDN := wi
	apiFQDN.Status.NodeName, apiFQDN.Status.FQDN = "api", "api.winnode.test"
	kubernetesNode := wi
	kubernetesNode.Status.NodeName = "kubernetes"
	otherNodes := map[netip.Addr]string{netip.MustParseAddr("10.0.0.9"): "control-plane-1", netip.MustParseAddr("10.0.0.5"): "win-host1"}
	nodes := map[string]string{"control-plane-1": "uid-cp", "win-host1": "uid-1", "win-host2": "uid-2"}
	cloud := map[string][]string{"win-host1": {"ip-10-0-0-5.ec2.internal", "ec2-1-2-3-4.compute.amazonaws.com"}}
	defaults := DefaultPolicy()
	allow192 := DefaultPolicy()
	allow192.NodeAddressCIDRs = []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}
	allowAll := DefaultPolicy()
	allowAll.NodeAddressCIDRs = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}
	otherDomain := DefaultPolicy()
	otherDomain.ClusterDomain = "k8s.corp"
	corp := DefaultPolicy()
	corp.NodeDNSDomains = []string{"corp.example.com", "winnode.test"}

	cases := []struct {
		name    string
		wi      winnodev1.WindowsInstance
		policy  Policy
		noCloud bool // the node DNS policy is not in force
		dns     []string
		ips     []string
		want    string // "" approves
	}{
		{"spec.address and node name", wi, defaults, false, []string{"win-host1"}, []string{"10.0.0.5"}, ""},
		{"node name in any case", wi, defaults, false, []string{"WIN-HOST1", "win-host1."}, nil, ""},
		{"the FQDN the host reports, alone", wi, defaults, false, []string{"win-host1.corp.example.com"}, nil, "not a name winnode can attribute"},
		{"the FQDN under a listed domain", wi, corp, false, []string{"win-host1.corp.example.com"}, nil, ""},
		{"another name under a listed domain", wi, corp, false, []string{"win-host9.corp.example.com"}, nil, "not a name winnode can attribute"},
		{"the Node's DNS names a cloud controller manager set", wi, defaults, false, []string{"win-host1", "ip-10-0-0-5.ec2.internal", "ec2-1-2-3-4.compute.amazonaws.com"}, nil, ""},
		{"the Node's DNS names without the node DNS policy", wi, defaults, true, []string{"ip-10-0-0-5.ec2.internal"}, nil, "not a name winnode can attribute"},
		{"a name of the API server's certificate", wi, defaults, false, []string{"api.winnode.test"}, nil, "API server's serving certificate"},
		{"an API server name under a listed domain", apiFQDN, corp, false, []string{"api.winnode.test"}, nil, "API server's serving certificate"},
		{"an address of the API server's certificate", wi, allowAll, false, nil, []string{"10.0.0.1"}, "API server's serving certificate"},
		{"another Node's name", wi, defaults, false, []string{"control-plane-1"}, nil, "the name of Node control-plane-1"},
		{"reported address, no CIDR allowed", wi, defaults, false, nil, []string{"192.168.7.5"}, "outside the allowed node address CIDRs"},
		{"reported address inside an allowed CIDR", wi, allow192, false, nil, []string{"10.0.0.5", "192.168.7.5"}, ""},
		{"address the host does not report", wi, allowAll, false, nil, []string{"192.168.7.6"}, "is not an address of WindowsInstance wi-1's host"},
		{"Service IP the host reports", wi, allowAll, false, nil, []string{"10.96.0.1"}, "in the Service range"},
		{"Service IP, other Service range", wi, func() Policy {
			p := allowAll
			p.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("172.30.0.0/16")}
			return p
		}(), false, nil, []string{"172.30.0.1"}, "in the Service range"},
		{"another Node's address the host reports", wi, allowAll, false, nil, []string{"10.0.0.9"}, "an address of Node control-plane-1"},
		{"kubernetes.default.svc", wi, defaults, false, []string{"win-host1", "kubernetes.default.svc"}, nil, "service domain"},
		{"kubernetes.default.svc.cluster.local", wi, defaults, false, []string{"kubernetes.default.svc.cluster.local"}, nil, "service domain"},
		{"kubernetes", wi, defaults, false, []string{"kubernetes"}, nil, "service domain"},
		{"kubernetes.default", wi, defaults, false, []string{"KUBERNETES.default"}, nil, "service domain"},
		{"a Service in another namespace", wi, defaults, false, []string{"vault.secrets.svc"}, nil, "service domain"},
		{"a name in a custom cluster domain", wi, otherDomain, false, []string{"api.k8s.corp"}, nil, "service domain"},
		{"FQDN in the service domain", badFQDN, corp, false, []string{"kubernetes.default.svc.cluster.local"}, nil, "service domain"},
		{"node named kubernetes", kubernetesNode, defaults, false, []string{"kubernetes"}, nil, "service domain"},
		{"another host's name", wi, defaults, false, []string{"win-host2"}, nil, "the name of Node win-host2"},
		{"a name of no Node", wi, defaults, false, []string{"win-host3"}, nil, "not a name winnode can attribute"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl := csrTemplate{CN: "system:node:" + c.wi.Status.NodeName, O: []string{"system:nodes"}, DNS: c.dns, IPs: c.ips}
			csr := builder.CSR("").Request(makeCSRPEM(t, tmpl), certificatesv1.KubeletServingSignerName, servingUsages...).
				Requester(tmpl.CN, "system:nodes").Build()
			facts := Facts{Policy: c.policy, NodeOfAddress: func(ip netip.Addr) string { return otherNodes[ip] },
				NodeUID:        func(n string) (string, bool) { uid, ok := nodes[n]; return uid, ok },
				APIServerNames: []string{"localhost", "kubernetes", "api.winnode.test"},
				APIServerIPs:   []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.96.0.1")}}
			if !c.noCloud {
				facts.CloudDNSNames = func(n string) []string { return cloud[n] }
			}
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
	p, err := PolicyFromFlags("", "", "")
	if err != nil || len(p.NodeAddressCIDRs) != 0 || len(p.ServiceCIDRs) != 1 || p.ServiceCIDRs[0].String() != DefaultServiceCIDR {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	p, err = PolicyFromFlags("10.0.0.0/8", "172.30.0.0/16", " Corp.Example.com., winnode.test")
	if err != nil || len(p.ServiceCIDRs) != 1 || p.ServiceCIDRs[0].String() != "172.30.0.0/16" || len(p.NodeAddressCIDRs) != 1 ||
		len(p.NodeDNSDomains) != 2 || p.NodeDNSDomains[0] != "corp.example.com" {
		t.Fatalf("explicit: %+v, %v", p, err)
	}
	if _, err := PolicyFromFlags("", "", "corp_example"); err == nil || !strings.Contains(err.Error(), "--node-dns-domains") {
		t.Fatalf("a domain that is no DNS name: %v, want an error naming the flag", err)
	}
}
