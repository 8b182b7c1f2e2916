//go:build linux

package demo

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/testenv"
)

// The capi flavor (--flavor capi): the plain control plane with Cluster
// API's real core controllers (Cluster, MachineDeployment, MachineSet,
// Machine) and the test world's simulated providers beside it, a Cluster
// whose workload cluster is this one, and a MachineDeployment of
// --machines Windows Machines that winnode's bootstrap provider
// (WinnodeConfigTemplate) prepares and the operator configures.

// flavorCAPI is --flavor capi.
const flavorCAPI = "capi"

// Names the capi flavor creates, in testenv.CAPINamespace.
const (
	demoCluster           = "windows-cluster"
	demoMachineDeployment = "windows-workers-md-0"
	demoConfigTemplate    = "windows-workers"
)

// newCAPIClient is a client that knows Cluster API's and winnode's
// bootstrap types.
func newCAPIClient(d *demo) (client.Client, error) {
	s, err := testenv.CAPIScheme()
	if err != nil {
		return nil, err
	}
	return client.New(d.env.Config, client.Options{Scheme: s})
}

// createMachineDeployment creates the Cluster, the WinnodeConfigTemplate
// and the MachineDeployment.
func (d *demo) createMachineDeployment(ctx context.Context) error {
	d.say("creating Cluster %s/%s (its workload cluster is this one)", testenv.CAPINamespace, demoCluster)
	cluster, err := d.env.CreateCAPICluster(ctx, demoCluster)
	if err != nil {
		return fmt.Errorf("creating the Cluster API Cluster: %w", err)
	}
	tmpl := &bootstrapv1.WinnodeConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: demoConfigTemplate, Namespace: testenv.CAPINamespace}}
	tmpl.Spec.Template.Spec.Mode = bootstrapv1.ModePush
	md, infra := testenv.WinsimMachineDeployment(cluster.Name, demoMachineDeployment, int32(d.o.machines), testenv.WinnodeConfigTemplateBootstrap(demoConfigTemplate))
	for _, o := range []client.Object{tmpl, infra, md} {
		if err := d.mapiClient.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	d.say("created MachineDeployment %s/%s with %s bootstrapped by WinnodeConfigTemplate %s; Cluster API provisions them, the operator configures them\n",
		testenv.CAPINamespace, demoMachineDeployment, hostCount(d.o.machines, "Windows Machine"), demoConfigTemplate)
	return nil
}

// capiChangeLines are the "try" lines of the capi flavor.
func capiChangeLines(machines int) string {
	return fmt.Sprintf(`  # Cluster API's view: each Machine Running, linked to its Node, and the
  # NetBIOS-safe computer name winnode's bootstrap provider gave it.
  kubectl -n %[1]s get machines,winnodeconfigs
  # More Windows nodes, or fewer: a removed Machine's host is cleaned
  # before Cluster API deletes its infrastructure.
  kubectl -n %[1]s scale machinedeployment %[2]s --replicas %[3]d
`, testenv.CAPINamespace, demoMachineDeployment, machines+1)
}
