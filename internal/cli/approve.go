package cli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/csrapproval"
)

// approvalFlags are the administrator's CSR approval policy, the same flags
// as the operator's (docs/approval.md).
type approvalFlags struct {
	nodeAddressCIDRs string
	serviceCIDR      string
	nodeDNSDomains   string
}

func (f *approvalFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.nodeAddressCIDRs, "node-address-cidrs", "", csrapproval.NodeAddressCIDRsHelp)
	fs.StringVar(&f.serviceCIDR, "service-cidr", csrapproval.DefaultServiceCIDR, csrapproval.ServiceCIDRHelp)
	fs.StringVar(&f.nodeDNSDomains, "node-dns-domains", "", csrapproval.NodeDNSDomainsHelp)
}

func (f *approvalFlags) policy() (csrapproval.Policy, error) {
	return csrapproval.PolicyFromFlags(f.nodeAddressCIDRs, f.serviceCIDR, f.nodeDNSDomains)
}

// csrApprover approves the certificate requests of one host's kubelet
// during winnodectl add, with the operator's own decision function
// (csrapproval.Decide) given only this host's instance: it approves
// nothing the operator would not, and nothing for any other host.
type csrApprover struct {
	kube kubernetes.Interface
	inst *winnodev1.WindowsInstance
	// policy is --node-address-cidrs, --service-cidr and --node-dns-domains.
	policy csrapproval.Policy
	// apiServer reads the names of the API server's certificate (nil: none).
	apiServer *csrapproval.APIServerCertificate
	note      func(format string, args ...any)
}

// approve decides every pending kubelet CSR once. The facts are read again
// for each decision, after the approvals before it, as the operator's
// approver reads them for each CSR: two requests made with one credential
// get one approval, not two.
func (a *csrApprover) approve(ctx context.Context) error {
	list, err := a.kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing CertificateSigningRequests to approve the kubelet's: %w", err)
	}
	instances := []winnodev1.WindowsInstance{*a.inst}
	for i := range list.Items {
		csr := &list.Items[i]
		if len(csr.Status.Conditions) > 0 || csr.Spec.SignerName == "" {
			continue // decided already
		}
		if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName && csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
			continue
		}
		facts, err := csrapproval.LoadFacts(ctx, a.kube, a.policy)
		if err != nil {
			return err
		}
		facts.JoinNamespace = joinNamespace
		if a.apiServer != nil {
			if facts.APIServerNames, facts.APIServerIPs, err = a.apiServer.Read(ctx); err != nil {
				return err
			}
		}
		d := csrapproval.Decide(csr, instances, facts)
		if !d.Approve {
			continue // another host's, or not one winnode approves
		}
		// The approver's record, as the operator keeps it on the instance:
		// the proof that the Node then registered is this host's.
		if d.Record != nil {
			a.inst.Status.ClientCertificate = d.Record
			instances[0].Status.ClientCertificate = d.Record
		}
		if err := csrapproval.Approve(ctx, a.kube, csr, "approved by winnodectl add: "+d.Reason); err != nil {
			return err
		}
		a.note("approved CSR %s (%s): %s", csr.Name, csr.Spec.SignerName, d.Reason)
	}
	return nil
}
