package csrapproval

import (
	"cmp"
	"encoding/pem"
	"net/netip"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/testkit/builder"
)

// The requests of these tests are made by package fixture, as the
// controller's tests make theirs.
type csrTemplate = fixture.CSR

var (
	makeCSRPEM    = fixture.CSRPEM
	clientUsages  = fixture.ClientUsages
	servingUsages = fixture.ServingUsages
)

func testInstance(name, nodeName, tokenID string) winnodev1.WindowsInstance {
	return *builder.Instance(name).Host("10.0.0.5", "Administrator").Port(22).Node(nodeName, "").BootstrapToken(tokenID).
		Reported("WIN-HOST1", "win-host1.corp.example.com", "10.0.0.5", "192.168.7.5").Build()
}

// testPolicy allows the test hosts' reported addresses (status.addresses).
var testPolicy = Policy{
	NodeAddressCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24"), netip.MustParsePrefix("192.168.0.0/16")},
	ServiceCIDRs:     []netip.Prefix{netip.MustParsePrefix(DefaultServiceCIDR)},
}

func TestDecide(t *testing.T) {
	instances := []winnodev1.WindowsInstance{
		testInstance("wi-1", "win-host1", "abcdef"),
		testInstance("wi-2", "win-host2", "ghijkl"),
		testInstance("wi-nonode", "", "mnopqr"),
	}
	instances[1].Status.Hostname, instances[1].Status.FQDN, instances[1].Status.Addresses = "WIN-HOST2", "", []string{"10.0.0.6"}
	instances[1].Spec.Address = "win-host2.example.com"
	deleting := testInstance("wi-del", "win-del", "stuvwx")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	deleting.Status.NodeUID = "uid-del" // it keeps its name while it is deconfigured
	instances = append(instances, deleting)
	// A newcomer reporting win-host1's name, with a token of its own: wi-1
	// fixed the name first.
	fixed := metav1.NewTime(now.Add(-time.Hour))
	instances[0].Status.NodeNameFixedAt = &fixed
	clone := testInstance("wi-clone", "win-host1", "clonez")
	later := metav1.NewTime(now.Time)
	clone.Status.NodeNameFixedAt = &later
	instances = append(instances, clone)
	// Its Node registered, its kubelet asks again with a new token.
	rejoin := testInstance("wi-rejoin", "win-rejoin", "rejoin")
	rejoin.Status.NodeUID = "uid-rejoin"
	instances = append(instances, rejoin)
	// Joined with a ServiceAccount, on an API server without bootstrap-token
	// authentication (the operator's namespace is winnode-system).
	saInst := testInstance("wi-sa", "win-sa", "")
	saInst.Status.JoinServiceAccount = "winnode-join-wi-sa"
	instances = append(instances, saInst)
	// Cluster API Machines in Pull mode (PullMachine.Instance): no
	// WindowsInstance, their facts from the Machine and its WinnodeConfig.
	pull := func(cfg, node, token string, f func(*PullMachine)) winnodev1.WindowsInstance {
		m := PullMachine{Config: "capi/" + cfg, Machine: "m-" + cfg, NodeName: node, BootstrapTokenID: token, Created: metav1.NewTime(now.Add(-time.Minute)),
			Addresses: []string{"10.0.0.20", "172.16.0.9"}}
		if f != nil {
			f(&m)
		}
		return m.Instance()
	}
	instances = append(instances,
		pull("pull-1", "WIN-PULL1", "pull01", nil),
		pull("pull-del", "win-pulldel", "pulldl", func(m *PullMachine) { m.Deleting, m.Addresses = true, []string{"10.0.0.21"} }),
		pull("pull-joined", "win-pulljn", "pulljn", func(m *PullMachine) { m.Joined, m.Addresses = true, []string{"10.0.0.22"} }),
		pull("pull-clone", "win-host1", "pullcl", func(m *PullMachine) { m.NameAssigned, m.Addresses = &later, []string{"10.0.0.23"} }),
		// Newer Machines reporting an address another host keeps: pull-1's
		// ExternalIP (in another spelling), wi-1's spec.address.
		pull("pull-dup", "win-pulldup", "pulldp", func(m *PullMachine) { m.Created, m.Addresses = now, []string{"10.0.0.24", "::ffff:172.16.0.9"} }),
		pull("pull-onwi", "win-pullwi", "pullwi", func(m *PullMachine) { m.Created, m.Addresses = now, []string{"10.0.0.5"} }),
		pull("pull-noaddr", "win-pullna", "pullna", func(m *PullMachine) { m.Addresses = nil }))
	saUser := "system:serviceaccount:winnode-system:winnode-join-wi-sa"
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:winnode-system", "system:authenticated"}

	goodClient := csrTemplate{CN: "system:node:win-host1", O: []string{"system:nodes"}}
	goodServing := csrTemplate{CN: "system:node:win-host1", O: []string{"system:nodes"}, DNS: []string{"win-host1", "WIN-HOST1"}, IPs: []string{"10.0.0.5", "192.168.7.5"}}
	bootstrapGroups := []string{"system:bootstrappers", bootstrap.Group, "system:authenticated"}
	nodeGroups := []string{"system:nodes", "system:authenticated"}

	type tc struct {
		name       string
		signer     string
		user       string
		groups     []string
		tmpl       csrTemplate
		usages     []certificatesv1.KeyUsage
		nodeExists bool
		nodeUID    string // the UID of the Node that exists
		rawRequest []byte
		approve    bool
		want       string // in Reason
	}
	client := func(name string, f func(*tc)) tc {
		c := tc{name: name, signer: certificatesv1.KubeAPIServerClientKubeletSignerName, user: "system:bootstrap:abcdef", groups: bootstrapGroups, tmpl: goodClient, usages: clientUsages}
		f(&c)
		return c
	}
	serving := func(name string, f func(*tc)) tc {
		c := tc{name: name, signer: certificatesv1.KubeletServingSignerName, user: "system:node:win-host1", groups: nodeGroups, tmpl: goodServing, usages: servingUsages}
		f(&c)
		return c
	}
	cases := []tc{
		client("client: good", func(c *tc) { c.approve, c.want = true, "node win-host1 of WindowsInstance wi-1" }),
		client("client: minimal usages", func(c *tc) { c.usages, c.approve = []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, true }),
		client("client: wrong node name", func(c *tc) { c.tmpl.CN, c.want = "system:node:win-host2", `want "system:node:win-host1"` }),
		client("client: CN without prefix", func(c *tc) { c.tmpl.CN, c.want = "win-host1", "CN" }),
		client("client: another instance's token", func(c *tc) { c.user, c.want = "system:bootstrap:ghijkl", `want "system:node:win-host2"` }),
		client("client: unknown token", func(c *tc) { c.user, c.want = "system:bootstrap:zzzzzz", "which no WindowsInstance was issued" }),
		client("client: requested by an admin", func(c *tc) {
			c.user, c.groups, c.want = "kubernetes-admin", []string{"system:masters"}, "not by a winnode join credential"
		}),
		client("client: requested by the node itself", func(c *tc) {
			c.user, c.groups, c.want = "system:node:win-host1", nodeGroups, "not Ready" // a renewal, and wi-1 is not Ready (limits_test.go)
		}),
		client("client: join ServiceAccount", func(c *tc) {
			c.user, c.groups, c.tmpl.CN, c.approve, c.want = saUser, saGroups, "system:node:win-sa", true, "join ServiceAccount winnode-system/winnode-join-wi-sa"
		}),
		client("client: join ServiceAccount asks for another node", func(c *tc) {
			c.user, c.groups, c.want = saUser, saGroups, `want "system:node:win-sa"`
		}),
		client("client: ServiceAccount of another namespace", func(c *tc) {
			c.user, c.groups, c.tmpl.CN, c.want = "system:serviceaccount:evil:winnode-join-wi-sa", []string{"system:serviceaccounts:evil"}, "system:node:win-sa", "not by a winnode join credential"
		}),
		client("client: ServiceAccount no instance was issued", func(c *tc) {
			c.user, c.groups, c.tmpl.CN, c.want = "system:serviceaccount:winnode-system:winnode-join-other", saGroups, "system:node:win-sa", "which no WindowsInstance was issued"
		}),
		client("client: other ServiceAccount of the namespace", func(c *tc) {
			c.user, c.groups, c.tmpl.CN, c.want = "system:serviceaccount:winnode-system:default", saGroups, "system:node:win-sa", "not by a winnode join credential"
		}),
		client("client: join ServiceAccount without its namespace group", func(c *tc) {
			c.user, c.groups, c.tmpl.CN, c.want = saUser, []string{"system:authenticated"}, "system:node:win-sa", "lack system:serviceaccounts:winnode-system"
		}),
		client("client: token without the winnode group", func(c *tc) { c.groups, c.want = []string{"system:bootstrappers"}, "lack "+bootstrap.Group }),
		client("client: extra organization", func(c *tc) {
			c.tmpl.O, c.want = []string{"system:nodes", "system:masters"}, "want exactly [system:nodes]"
		}),
		client("client: wrong organization", func(c *tc) { c.tmpl.O, c.want = []string{"system:masters"}, "want exactly" }),
		client("client: no organization", func(c *tc) { c.tmpl.O, c.want = nil, "want exactly" }),
		client("client: OU", func(c *tc) { c.tmpl.OU, c.want = []string{"x"}, "attributes besides" }),
		client("client: DNS SAN", func(c *tc) { c.tmpl.DNS, c.want = []string{"win-host1"}, "subject alternative names" }),
		client("client: IP SAN", func(c *tc) { c.tmpl.IPs, c.want = []string{"10.0.0.5"}, "subject alternative names" }),
		client("client: email SAN", func(c *tc) { c.tmpl.Emails, c.want = []string{"a@b.c"}, "subject alternative names" }),
		client("client: URI SAN", func(c *tc) { c.tmpl.URIs, c.want = []string{"spiffe://x/y"}, "subject alternative names" }),
		client("client: server auth usage", func(c *tc) {
			c.usages, c.want = append(clientUsages, certificatesv1.UsageServerAuth), `usage "server auth" is not allowed`
		}),
		client("client: no client auth", func(c *tc) {
			c.usages, c.want = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}, `lack "client auth"`
		}),
		client("client: node exists", func(c *tc) { c.nodeExists, c.want = true, "already exists" }),
		client("client: another instance fixed the name first", func(c *tc) {
			c.user, c.want = "system:bootstrap:clonez", "claimed by WindowsInstance wi-1"
		}),
		client("client: its own Node exists", func(c *tc) {
			c.user, c.tmpl.CN, c.nodeExists, c.nodeUID, c.approve, c.want = "system:bootstrap:rejoin", "system:node:win-rejoin", true, "uid-rejoin", true, "node win-rejoin"
		}),
		client("client: another Node of its name exists", func(c *tc) {
			c.user, c.tmpl.CN, c.nodeExists, c.nodeUID, c.want = "system:bootstrap:rejoin", "system:node:win-rejoin", true, "uid-other", "already exists"
		}),
		client("client: instance has no node name yet", func(c *tc) {
			c.user, c.tmpl.CN, c.want = "system:bootstrap:mnopqr", "system:node:", "no expected node name"
		}),
		client("client: instance being deleted", func(c *tc) {
			c.user, c.tmpl.CN, c.want = "system:bootstrap:stuvwx", "system:node:win-del", "being deleted"
		}),
		client("pull: the Machine's token, its node name", func(c *tc) {
			c.user, c.tmpl.CN, c.approve, c.want = "system:bootstrap:pull01", "system:node:win-pull1", true, "node win-pull1 of WindowsInstance pull:capi/pull-1"
		}),
		client("pull: the Machine's token asks for another node", func(c *tc) {
			c.user, c.want = "system:bootstrap:pull01", `want "system:node:win-pull1"`
		}),
		client("pull: a Node of its name exists", func(c *tc) {
			c.user, c.tmpl.CN, c.nodeExists, c.want = "system:bootstrap:pull01", "system:node:win-pull1", true, "already exists"
		}),
		client("pull: the Machine is being deleted", func(c *tc) {
			c.user, c.tmpl.CN, c.want = "system:bootstrap:pulldl", "system:node:win-pulldel", "being deleted"
		}),
		client("pull: the Machine joined, its token is gone", func(c *tc) {
			c.user, c.tmpl.CN, c.want = "system:bootstrap:pulljn", "system:node:win-pulljn", "which no WindowsInstance was issued"
		}),
		client("pull: an instance holds its node name", func(c *tc) {
			c.user, c.want = "system:bootstrap:pullcl", "claimed by WindowsInstance wi-1"
		}),
		client("pull: another Pull Machine keeps its address", func(c *tc) {
			c.user, c.tmpl.CN, c.want = "system:bootstrap:pulldp", "system:node:win-pulldup", "address 172.16.0.9 of Machine capi/m-pull-dup (Pull mode) is also reported by Machine capi/m-pull-1 (Pull mode), which keeps it"
		}),
		client("pull: a WindowsInstance keeps its address", func(c *tc) {
			c.user, c.tmpl.CN, c.want = "system:bootstrap:pullwi", "system:node:win-pullwi", "address 10.0.0.5 of Machine capi/m-pull-onwi (Pull mode) is also reported by WindowsInstance wi-1"
		}),
		client("pull: its Machine reports no address yet", func(c *tc) {
			c.user, c.tmpl.CN, c.want = "system:bootstrap:pullna", "system:node:win-pullna", "Machine capi/m-pull-noaddr (Pull mode) reports no address yet"
		}),
		client("pull: renewal of a joined Machine's node", func(c *tc) {
			c.user, c.groups, c.tmpl.CN, c.approve, c.want = "system:node:win-pulljn", nodeGroups, "system:node:win-pulljn", true, "renewal"
		}),
		client("pull: renewal of a Machine not joined", func(c *tc) {
			c.user, c.groups, c.tmpl.CN, c.want = "system:node:win-pull1", nodeGroups, "system:node:win-pull1", "not Ready"
		}),
		client("client: not PEM", func(c *tc) { c.rawRequest, c.want = []byte("garbage"), "not a PEM" }),
		client("client: wrong signer", func(c *tc) { c.signer, c.want = "kubernetes.io/kube-apiserver-client", "not a kubelet signer" }),
		client("client: custom signer", func(c *tc) { c.signer, c.want = "example.com/anything", "not a kubelet signer" }),

		serving("serving: good", func(c *tc) { c.approve = true }),
		serving("serving: IP only", func(c *tc) { c.tmpl.DNS, c.approve = nil, true }),
		serving("serving: address from spec", func(c *tc) {
			c.user, c.tmpl.CN, c.tmpl.IPs, c.approve = "system:node:win-host2", "system:node:win-host2", []string{"10.0.0.6"}, true
			c.tmpl.DNS = []string{"win-host2"}
		}),
		serving("pull: serving, the Machine's InternalIP", func(c *tc) {
			c.user, c.tmpl.CN, c.tmpl.DNS, c.tmpl.IPs, c.approve = "system:node:win-pull1", "system:node:win-pull1", []string{"win-pull1"}, []string{"10.0.0.20"}, true
		}),
		serving("pull: serving, a Machine address outside the node address CIDRs", func(c *tc) {
			c.user, c.tmpl.CN, c.tmpl.DNS, c.tmpl.IPs, c.want = "system:node:win-pull1", "system:node:win-pull1", nil, []string{"10.0.0.20", "172.16.0.9"}, "outside the allowed node address CIDRs"
		}),
		serving("pull: serving, another host's address", func(c *tc) {
			c.user, c.tmpl.CN, c.tmpl.DNS, c.tmpl.IPs, c.want = "system:node:win-pull1", "system:node:win-pull1", nil, []string{"10.0.0.5"}, "IP SAN 10.0.0.5"
		}),
		serving("pull: serving, another Pull Machine keeps its address", func(c *tc) {
			c.user, c.tmpl.CN, c.tmpl.DNS, c.tmpl.IPs, c.want = "system:node:win-pulldup", "system:node:win-pulldup", []string{"win-pulldup"}, []string{"10.0.0.24"}, "is also reported by Machine capi/m-pull-1"
		}),
		serving("pull: serving, the Machine is being deleted", func(c *tc) {
			c.user, c.tmpl.CN, c.tmpl.DNS, c.tmpl.IPs, c.want = "system:node:win-pulldel", "system:node:win-pulldel", []string{"win-pulldel"}, []string{"10.0.0.20"}, "being deleted"
		}),
		serving("serving: foreign DNS SAN", func(c *tc) {
			c.tmpl.DNS, c.want = []string{"win-host1", "kubernetes.default"}, `DNS SAN "kubernetes.default"`
		}),
		serving("serving: foreign IP SAN", func(c *tc) { c.tmpl.IPs, c.want = []string{"10.0.0.99"}, "IP SAN 10.0.0.99" }),
		serving("serving: another host's name", func(c *tc) { c.tmpl.DNS, c.want = []string{"win-host2"}, `DNS SAN "win-host2"` }),
		serving("serving: URI SAN", func(c *tc) { c.tmpl.URIs, c.want = []string{"https://x"}, "email or URI" }),
		serving("serving: no SAN", func(c *tc) { c.tmpl.DNS, c.tmpl.IPs, c.want = nil, nil, "no DNS or IP SAN" }),
		serving("serving: CN not the requester", func(c *tc) { c.tmpl.CN, c.want = "system:node:win-host2", "is not the requester" }),
		serving("serving: another node asks", func(c *tc) { c.user, c.want = "system:node:win-host2", "is not the requester" }),
		serving("serving: unmanaged node", func(c *tc) {
			c.user, c.tmpl.CN, c.want = "system:node:linux-1", "system:node:linux-1", "not a WindowsInstance's node"
		}),
		serving("serving: requested by a bootstrap token", func(c *tc) { c.user, c.groups, c.want = "system:bootstrap:abcdef", bootstrapGroups, "not by a node" }),
		serving("serving: without system:nodes group", func(c *tc) { c.groups, c.want = []string{"system:authenticated"}, "lack system:nodes" }),
		serving("serving: wrong O", func(c *tc) { c.tmpl.O, c.want = []string{"system:masters"}, "want exactly" }),
		serving("serving: client auth usage", func(c *tc) {
			c.usages, c.want = append(servingUsages, certificatesv1.UsageClientAuth), `usage "client auth" is not allowed`
		}),
		serving("serving: no server auth", func(c *tc) {
			c.usages, c.want = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}, `lack "server auth"`
		}),
		serving("serving: instance being deleted", func(c *tc) {
			c.user, c.tmpl.CN, c.tmpl.DNS, c.tmpl.IPs, c.want = "system:node:win-del", "system:node:win-del", []string{"win-del"}, nil, "being deleted"
		}),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := c.rawRequest
			if req == nil {
				req = makeCSRPEM(t, c.tmpl)
			}
			csr := builder.CSR("csr-x").Request(req, c.signer, c.usages...).Requester(c.user, c.groups...).Build()
			uid := cmp.Or(c.nodeUID, "uid-other")
			d := Decide(csr, instances, Facts{NodeUID: func(string) (string, bool) { return uid, c.nodeExists }, Policy: testPolicy, JoinNamespace: "winnode-system"})
			if d.Approve != c.approve {
				t.Fatalf("approve = %v (%s), want %v", d.Approve, d.Reason, c.approve)
			}
			// An approved first client certificate comes with the record the
			// approver keeps: which CSR, for which node, and whether a Node
			// of that name existed.
			first := c.approve && c.signer == certificatesv1.KubeAPIServerClientKubeletSignerName && !strings.HasPrefix(c.user, "system:node:")
			if r := d.Record; first != (r != nil) || r != nil && (r.CSRName != "csr-x" || "system:node:"+r.NodeName != c.tmpl.CN || r.NodeExisted != c.nodeExists) {
				t.Errorf("record %+v, want one for CSR csr-x, %s, node existed %v: %v", r, c.tmpl.CN, c.nodeExists, first)
			}
			if !strings.Contains(d.Reason, c.want) {
				t.Errorf("reason %q lacks %q", d.Reason, c.want)
			}
		})
	}
}

func TestDecideCSRTamperedSignature(t *testing.T) {
	inst := []winnodev1.WindowsInstance{testInstance("wi-1", "win-host1", "abcdef")}
	p := makeCSRPEM(t, csrTemplate{CN: "system:node:win-host1", O: []string{"system:nodes"}})
	block, _ := pem.Decode(p)
	block.Bytes[len(block.Bytes)-5] ^= 0xff // in the signature
	csr := builder.CSR("").Request(pem.EncodeToMemory(block), certificatesv1.KubeAPIServerClientKubeletSignerName, clientUsages...).
		Requester("system:bootstrap:abcdef", bootstrap.Group).Build()
	if d := Decide(csr, inst, Facts{NodeUID: noNodes, Policy: testPolicy, JoinNamespace: "winnode-system"}); d.Approve {
		t.Fatalf("approved a CSR with a broken signature")
	}
}

// FuzzDecideCSR: a CSR's request, requester and signer come from whoever can
// create CSRs. Whatever they hold, an approval implies a parseable request
// for the instance's node with its expected requester and no foreign names.
func FuzzDecide(f *testing.F) {
	good := makeCSRPEM(f, csrTemplate{CN: "system:node:win-host1", O: []string{"system:nodes"}})
	serving := makeCSRPEM(f, csrTemplate{CN: "system:node:win-host1", O: []string{"system:nodes"}, DNS: []string{"win-host1"}, IPs: []string{"10.0.0.5"}})
	f.Add(good, "system:bootstrap:abcdef", certificatesv1.KubeAPIServerClientKubeletSignerName, true)
	f.Add(serving, "system:node:win-host1", certificatesv1.KubeletServingSignerName, false)
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"), "system:bootstrap:abcdef", certificatesv1.KubeAPIServerClientKubeletSignerName, true)
	f.Add([]byte{}, "", "", false)
	instances := []winnodev1.WindowsInstance{testInstance("wi-1", "win-host1", "abcdef")}
	f.Fuzz(func(t *testing.T, request []byte, user, signer string, clientUsage bool) {
		usages := servingUsages
		groups := []string{"system:nodes"}
		if clientUsage {
			usages, groups = clientUsages, []string{bootstrap.Group}
		}
		csr := builder.CSR("").Request(request, signer, usages...).Requester(user, groups...).Build()
		d := Decide(csr, instances, Facts{NodeUID: noNodes, Policy: testPolicy, JoinNamespace: "winnode-system"})
		if !d.Approve {
			return
		}
		req, err := parseCSR(request)
		if err != nil {
			t.Fatalf("approved a request that does not parse: %v", err)
		}
		if req.Subject.CommonName != "system:node:win-host1" {
			t.Fatalf("approved a certificate for %q", req.Subject.CommonName)
		}
		switch signer {
		case certificatesv1.KubeAPIServerClientKubeletSignerName:
			if user != "system:bootstrap:abcdef" || sanCount(req) != 0 {
				t.Fatalf("approved a client CSR from %q with %d SANs", user, sanCount(req))
			}
		case certificatesv1.KubeletServingSignerName:
			if user != "system:node:win-host1" {
				t.Fatalf("approved a serving CSR from %q", user)
			}
		default:
			t.Fatalf("approved a CSR for signer %q", signer)
		}
	})
}

// noNodes is a cluster without Nodes.
func noNodes(string) (string, bool) { return "", false }
