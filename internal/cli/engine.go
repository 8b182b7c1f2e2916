package cli

import (
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/configure"
)

// engine is the operator's engine (configure.Configurer) that add, upgrade
// and remove run on one host, built one way from the host flags: the
// cluster and key of sess, the address policy, the join credentials, the
// network and the platform (each at its default where the command has no
// such flag), with steps printing what it does. add and upgrade then give
// it the payload and where to keep the host key's pin.
func (f *hostFlags) engine(s Streams, sess *session, steps *stepPrinter) (*configure.Configurer, error) {
	policy, err := f.approval.policy()
	if err != nil {
		return nil, err
	}
	addresses, err := f.addresses()
	if err != nil {
		return nil, err
	}
	plat, platReason, osReader, err := sess.platform(f.platform)
	if err != nil {
		return nil, err
	}
	return &configure.Configurer{
		Kube:     sess.kube,
		Signer:   sess.signer,
		Version:  Version,
		Event:    steps.event,
		Progress: steps.progress,
		// Where add makes the host's join ServiceAccount (and remove finds
		// it, if add was interrupted before revoking it).
		JoinCredentials:   bootstrap.Mode(f.joinCredentials),
		JoinNamespace:     joinNamespace,
		Addresses:         addresses,
		Network:           f.network,
		ServiceCIDR:       policy.ServiceCIDRs[0].String(),
		HybridClusterCIDR: f.hybridClusterCIDR,
		Logs:              f.logs,
		Platform:          plat,
		PlatformReason:    platReason,
		OpenShift:         osReader,
		AfterStep:         func(_ *winnodev1.WindowsInstance, step string) { steps.begin(step) },
		APIServerNames:    sess.apiCert.Names,
		Log:               logrTo(s.Err, f.verbose),
	}, nil
}
