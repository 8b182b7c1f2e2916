//go:build linux

package demo

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/controller/keys"
	"github.com/winnode/winnode/internal/machineapi"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/cloud"
)

// The openshift flavor (--flavor openshift): the test world's openshift
// flavor of the control plane (no bootstrap tokens, OpenShift's CRDs and
// configuration objects), the OpenShift Machine API's real controllers
// (MachineSet, Machine, node link), their "winsim" provider booting
// simulated hosts on a simulated cloud served by this process, and one
// Windows MachineSet of --machines replicas that the operator configures.

// Flavors of the demo.
const (
	flavorPlain     = "plain"
	flavorOpenShift = "openshift"
)

// demoMachineSet is the Windows MachineSet the openshift flavor creates.
const demoMachineSet = "winnode-demo-windows"

// ovnNetwork is the HNS network OVN-Kubernetes' Windows node programs make,
// which the simulated cluster CNI makes in their place.
const ovnNetwork = "OVNKubernetesHybridOverlayNetwork"

// startCloud serves the simulated cloud that the Machine controllers'
// winsim provider provisions on; each instance's host keeps its state under
// hostsDir. cni, when set, is the pod network the cluster's own Windows
// CNI would set up on each host (OVN-Kubernetes' on OpenShift): it does
// not run here, so it is simulated at boot, as its DaemonSet would do.
func (d *demo) startCloud(hostsDir, standinBin, cni string, logger *slog.Logger) (string, error) {
	var subnet atomic.Int32
	d.cloud = cloud.New(cloud.Options{
		NewHost: func(name string) (*winsim.Host, error) {
			h, err := winsim.New(winsim.Options{
				StateDir: filepath.Join(hostsDir, name), StandinBinary: standinBin,
				Logger: logger.With("machine", name), BootDelay: rebootDowntime,
			})
			if err != nil || cni == "" {
				return h, err
			}
			return h, h.SimulateClusterCNI(cni, fmt.Sprintf("10.245.%d.0/24", subnet.Add(1)))
		},
		Logger: logger,
	})
	url, stop, err := d.cloud.Serve()
	if err != nil {
		return "", err
	}
	d.stopCloud = stop
	return url, nil
}

// createMachineSet creates the Windows MachineSet, once the operator has
// copied windows-user-data to openshift-machine-api (a Machine created
// before would find no user data and fail).
func (d *demo) createMachineSet(ctx context.Context) error {
	if err := d.waitUserDataCopy(ctx); err != nil {
		return err
	}
	ms := testenv.WinsimMachineSet(demoMachineSet, keys.UserDataSecret, int32(d.o.machines), map[string]string{machineapi.LabelOSID: "Windows"})
	if err := d.mapiClient.Create(ctx, ms); err != nil {
		return fmt.Errorf("creating MachineSet %s/%s: %w", machineapi.Namespace, demoMachineSet, err)
	}
	d.say("created MachineSet %s/%s with %s; the Machine API provisions them, the operator configures them\n",
		machineapi.Namespace, demoMachineSet, hostCount(d.o.machines, "Windows Machine"))
	return nil
}

// waitUserDataCopy waits for the operator's copy of windows-user-data in
// openshift-machine-api.
func (d *demo) waitUserDataCopy(ctx context.Context) error {
	key := client.ObjectKey{Namespace: machineapi.Namespace, Name: keys.UserDataSecret}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := d.client.Get(ctx, key, &corev1.Secret{})
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("waiting for Secret %s (the operator's copy of the user data, for the MachineSet): %w", key, err)
	}
	return nil
}

// newMachineAPIClient is a client that knows the Machine API's types.
func newMachineAPIClient(d *demo) (client.Client, error) {
	s := cli.Scheme()
	if err := machinev1.Install(s); err != nil {
		return nil, err
	}
	return client.New(d.env.Config, client.Options{Scheme: s})
}

// hosts are every simulated host: the listed ones, then the Machines'.
func (d *demo) hosts() []*winsim.Host {
	var all []*winsim.Host
	if d.fleet != nil {
		all = append(all, d.fleet.Hosts...)
	}
	if d.cloud != nil {
		for _, n := range d.cloud.Names() {
			if h := d.cloud.Host(n); h != nil {
				all = append(all, h)
			}
		}
	}
	return all
}
