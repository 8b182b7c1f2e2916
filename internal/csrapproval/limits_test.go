package csrapproval

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/testkit/builder"
)

func csrWithKey(t *testing.T, key crypto.Signer, cn string, dns []string) []byte {
	return fixture.CSRPEM(t, fixture.CSR{CN: cn, O: []string{"system:nodes"}, DNS: dns, Key: key})
}

// TestKeyTypes: weak keys are left alone, for client and serving CSRs.
func TestKeyTypes(t *testing.T) {
	must := func(k crypto.Signer, err error) crypto.Signer {
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	keys := []struct {
		name string
		key  crypto.Signer
		want string // "" approves
	}{
		{"RSA 1024", must(rsa.GenerateKey(rand.Reader, 1024)), "RSA key of 1024 bits"},
		{"RSA 2048", must(rsa.GenerateKey(rand.Reader, 2048)), ""},
		{"ECDSA P-224", must(ecdsa.GenerateKey(elliptic.P224(), rand.Reader)), "curve P-224"},
		{"ECDSA P-256", must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)), ""},
		{"ECDSA P-384", must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)), ""},
		{"ECDSA P-521", must(ecdsa.GenerateKey(elliptic.P521(), rand.Reader)), "curve P-521"},
		{"Ed25519", ed, ""},
	}
	inst := []winnodev1.WindowsInstance{testInstance("wi-1", "win-host1", "abcdef")}
	facts := Facts{NodeUID: noNodes, Policy: DefaultPolicy()}
	for _, k := range keys {
		for _, signer := range []string{certificatesv1.KubeAPIServerClientKubeletSignerName, certificatesv1.KubeletServingSignerName} {
			t.Run(k.name+" "+signer, func(t *testing.T) {
				csr := builder.CSR("").Request(csrWithKey(t, k.key, "system:node:win-host1", nil), signer, clientUsages...).
					Requester("system:bootstrap:abcdef", bootstrap.Group)
				if signer == certificatesv1.KubeletServingSignerName {
					csr.Request(csrWithKey(t, k.key, "system:node:win-host1", []string{"win-host1"}), signer, servingUsages...).
						Requester("system:node:win-host1", "system:nodes")
				}
				d := Decide(csr.Build(), inst, facts)
				if d.Approve != (k.want == "") || !strings.Contains(d.Reason, k.want) {
					t.Fatalf("approve %v (%s), want approve %v reason %q", d.Approve, d.Reason, k.want == "", k.want)
				}
			})
		}
	}
}

// TestOneClientCertificatePerCredential: a join credential that already
// had a client CSR approved gets no second one, even before its Node
// registers; the CSR that was approved is not counted against itself.
func TestOneClientCertificatePerCredential(t *testing.T) {
	inst := []winnodev1.WindowsInstance{testInstance("wi-1", "win-host1", "abcdef")}
	approvedBy := map[string][]string{credential("system:bootstrap:abcdef", ""): {"csr-first"}}
	facts := Facts{NodeUID: noNodes, Policy: DefaultPolicy(),
		ApprovedClientCSRs: func(u, uid string) []string { return approvedBy[credential(u, uid)] }}
	csr := func(name string) *certificatesv1.CertificateSigningRequest {
		return builder.CSR(name).Request(makeCSRPEM(t, csrTemplate{CN: "system:node:win-host1", O: []string{"system:nodes"}}),
			certificatesv1.KubeAPIServerClientKubeletSignerName, clientUsages...).Requester("system:bootstrap:abcdef", bootstrap.Group).Build()
	}
	if d := Decide(csr("csr-second"), inst, facts); d.Approve || !strings.Contains(d.Reason, "already had client CSR csr-first approved") {
		t.Fatalf("second client CSR: approve %v (%s), want left alone", d.Approve, d.Reason)
	}
	if d := Decide(csr("csr-first"), inst, facts); !d.Approve {
		t.Fatalf("the approved CSR itself, decided again: %s", d.Reason)
	}
	approvedBy = map[string][]string{credential("system:bootstrap:ghijkl", ""): {"csr-other"}}
	if d := Decide(csr("csr-second"), inst, facts); !d.Approve {
		t.Fatalf("another credential's approval counted: %s", d.Reason)
	}
	// The same requester name with another UID is another credential: a
	// join ServiceAccount deleted after a join and made again when the
	// host is added again.
	approvedBy = map[string][]string{credential("system:bootstrap:abcdef", "uid-of-the-first"): {"csr-first"}}
	again := csr("csr-again")
	again.Spec.UID = "uid-of-the-second"
	if d := Decide(again, inst, facts); !d.Approve {
		t.Fatalf("a credential made again under the same name was refused: %s", d.Reason)
	}
}

// TestRenewal: a Ready winnode node renews its own client certificate;
// nothing more.
func TestRenewal(t *testing.T) {
	ready := testInstance("wi-1", "win-host1", "abcdef")
	ready.Status.Phase = winnodev1.PhaseReady
	configuring := testInstance("wi-2", "win-host2", "ghijkl")
	configuring.Status.Phase = winnodev1.PhaseConfiguring
	inst := []winnodev1.WindowsInstance{ready, configuring}
	own := csrTemplate{CN: "system:node:win-host1", O: []string{"system:nodes"}}
	cases := []struct {
		name   string
		user   string
		groups []string
		tmpl   csrTemplate
		usages []certificatesv1.KeyUsage
		want   string // "" approves
	}{
		{"own renewal", "system:node:win-host1", []string{"system:nodes"}, own, clientUsages, ""},
		{"another node's name", "system:node:win-host1", []string{"system:nodes"}, csrTemplate{CN: "system:node:win-host2", O: []string{"system:nodes"}}, clientUsages, "is not the requester"},
		{"with SANs", "system:node:win-host1", []string{"system:nodes"}, csrTemplate{CN: own.CN, O: own.O, DNS: []string{"win-host1"}}, clientUsages, "subject alternative names"},
		{"extra O", "system:node:win-host1", []string{"system:nodes"}, csrTemplate{CN: own.CN, O: []string{"system:nodes", "system:masters"}}, clientUsages, "want exactly"},
		{"server auth", "system:node:win-host1", []string{"system:nodes"}, own, servingUsages, "not allowed"},
		{"without the nodes group", "system:node:win-host1", []string{"system:authenticated"}, own, clientUsages, "lack system:nodes"},
		{"instance not Ready", "system:node:win-host2", []string{"system:nodes"}, csrTemplate{CN: "system:node:win-host2", O: []string{"system:nodes"}}, clientUsages, "not Ready"},
		{"not a winnode node", "system:node:linux-1", []string{"system:nodes"}, csrTemplate{CN: "system:node:linux-1", O: []string{"system:nodes"}}, clientUsages, "not a WindowsInstance's node"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			csr := builder.CSR("").Request(makeCSRPEM(t, c.tmpl), certificatesv1.KubeAPIServerClientKubeletSignerName, c.usages...).
				Requester(c.user, c.groups...).Build()
			d := Decide(csr, inst, Facts{NodeUID: func(string) (string, bool) { return "uid-other", true }, Policy: DefaultPolicy()})
			if d.Approve != (c.want == "") || !strings.Contains(d.Reason, c.want) {
				t.Fatalf("approve %v (%s), want approve %v reason %q", d.Approve, d.Reason, c.want == "", c.want)
			}
		})
	}
}
