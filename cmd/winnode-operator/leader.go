package main

import (
	"flag"
	"fmt"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The leader election's timings. controller-runtime's defaults (a Lease
// of 15 s, renewed every 2 s, given up when a renewal has not succeeded
// for 10 s) lost the Lease of an operator of 2,000 instances on a loaded
// machine: its API server took more than 10 s to answer, the operator
// exited as it must, and its replacement began the fleet again
// (docs/performance.md). Nothing in the process holds the renewal back:
// controller-runtime renews on a goroutine and clients of their own (their
// own client-side rate limit, a request timeout of half the renew
// deadline), and no reconcile shares a lock with it. What it waits for is
// the API server. The defaults are therefore the ones OpenShift gives its
// own operators (library-go's leader election defaults: a Lease of 137 s,
// renewed every 26 s, given up after 107 s without a renewal), which ride
// out a slow or restarting API server, and write the Lease 2.3 times a
// minute rather than 30. A replica that stops cleanly releases the Lease
// (LeaderElectionReleaseOnCancel), so only a crash makes its successor
// wait for the Lease to expire.
const (
	DefaultLeaseDuration = 137 * time.Second
	DefaultRenewDeadline = 107 * time.Second
	DefaultRetryPeriod   = 26 * time.Second
)

// leaderElection is the leader election's flags.
type leaderElection struct {
	elect                                     *bool
	leaseDuration, renewDeadline, retryPeriod *time.Duration
}

// bindLeaderElection defines the leader election's flags on fs: the
// names kube-controller-manager and kube-scheduler give them.
func bindLeaderElection(fs *flag.FlagSet) leaderElection {
	return leaderElection{
		elect:         fs.Bool("leader-elect", true, "elect one active replica with a Lease in the operator namespace"),
		leaseDuration: fs.Duration("leader-elect-lease-duration", DefaultLeaseDuration, "how long a replica that is not the leader waits, after the leader's last renewal, before it takes the Lease"),
		renewDeadline: fs.Duration("leader-elect-renew-deadline", DefaultRenewDeadline, "how long the leader tries to renew its Lease before it gives up the leadership and exits (shorter than --leader-elect-lease-duration, more than 1.2 times --leader-elect-retry-period)"),
		retryPeriod:   fs.Duration("leader-elect-retry-period", DefaultRetryPeriod, "how often the leader renews its Lease, and others try to take it"),
	}
}

// check refuses timings client-go's leader election would refuse, naming
// the flags.
func (l leaderElection) check() error {
	lease, renew, retry := *l.leaseDuration, *l.renewDeadline, *l.retryPeriod
	switch {
	case retry <= 0:
		return fmt.Errorf("--leader-elect-retry-period %s: want more than 0", retry)
	case renew <= time.Duration(leaderelection.JitterFactor*float64(retry)):
		return fmt.Errorf("--leader-elect-renew-deadline %s: want more than %v times --leader-elect-retry-period %s", renew, leaderelection.JitterFactor, retry)
	case lease <= renew:
		return fmt.Errorf("--leader-elect-lease-duration %s: want more than --leader-elect-renew-deadline %s", lease, renew)
	}
	return nil
}

// apply sets the manager's leader election.
func (l leaderElection) apply(o *ctrl.Options) {
	o.LeaderElection = *l.elect
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = l.leaseDuration, l.renewDeadline, l.retryPeriod
}
