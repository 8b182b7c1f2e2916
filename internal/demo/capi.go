//go:build linux

package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/image"
	"github.com/winnode/winnode/internal/testenv"
)

// The capi flavor (--flavor capi): Cluster API's usual topology, two
// clusters. The management cluster is the plain control plane with Cluster
// API's real core controllers (Cluster, MachineDeployment, MachineSet,
// Machine), the test world's simulated providers and the operator; the
// workload cluster is a second real control plane, reached through the
// Cluster's <cluster>-kubeconfig Secret, which the simulated control-plane
// provider writes. The demo creates the Cluster and a MachineDeployment of
// --machines Windows Machines that winnode's bootstrap provider
// (WinnodeConfigTemplate) prepares, in --capi-mode:
//   - pull (the default, WinnodeConfig's): the Machines boot from a
//     simulated image holding what `winnodectl image` writes, and their
//     simulated cloudbase-init runs the bootstrap data, which joins the
//     host to the workload cluster by itself; the operator never reaches
//     the hosts;
//   - push: the operator configures each Machine's host over SSH, and the
//     host joins the workload cluster.

// flavorCAPI is --flavor capi.
const flavorCAPI = "capi"

// The modes of --capi-mode.
const (
	capiModePull = "pull"
	capiModePush = "push"
)

// Names the capi flavor creates, in testenv.CAPINamespace, and the
// simulated image its Pull Machines boot from.
const (
	demoCluster           = "windows-cluster"
	demoMachineDeployment = "windows-workers-md-0"
	demoConfigTemplate    = "windows-workers"
	demoImage             = "winnode-demo"
)

// workloadKubeconfigSecret is the Secret Cluster API keeps the workload
// cluster's admin kubeconfig in (key "value").
const workloadKubeconfigSecret = demoCluster + "-kubeconfig"

// newCAPIClient is a client that knows Cluster API's and winnode's
// bootstrap types.
func newCAPIClient(d *demo) (client.Client, error) {
	s, err := testenv.CAPIScheme()
	if err != nil {
		return nil, err
	}
	return client.New(d.env.Config, client.Options{Scheme: s})
}

// startWorkload starts the workload cluster's control plane.
func (d *demo) startWorkload(ctx context.Context) error {
	d.say("starting the workload cluster's control plane (a second etcd, kube-apiserver, kube-controller-manager, kube-scheduler)")
	var err error
	if d.workload, err = testenv.Start(ctx, testenv.Options{}); err != nil {
		return fmt.Errorf("starting the workload cluster's control plane: %w", err)
	}
	d.say("workload control plane up at %s", d.workload.Host)
	d.workloadClient, err = cli.NewClient(d.workload.Config)
	return err
}

// createMachineDeployment creates the Cluster, whose workload cluster is
// the second control plane, writes out its kubeconfig Secret, and creates
// the demo's Windows workers (createWorkers).
func (d *demo) createMachineDeployment(ctx context.Context) error {
	d.say("creating Cluster %s/%s (its workload cluster is the second control plane)", testenv.CAPINamespace, demoCluster)
	cluster, err := d.env.CreateCAPIWorkloadCluster(ctx, demoCluster, d.workload)
	if err != nil {
		return fmt.Errorf("creating the Cluster API Cluster: %w", err)
	}
	if err := d.writeWorkloadKubeconfig(ctx); err != nil {
		return err
	}
	return d.createWorkers(ctx, cluster.Name, capiWorkers{mode: d.o.capiMode, deployment: demoMachineDeployment, template: demoConfigTemplate, machines: d.o.machines})
}

// capiWorkers are Windows Machines of the capi flavor: a MachineDeployment
// of machines Machines, bootstrapped by a WinnodeConfigTemplate in mode
// (capiModePull or capiModePush).
type capiWorkers struct {
	mode, deployment, template string
	machines                   int
}

// createWorkers creates w's WinnodeConfigTemplate, its infrastructure
// template (the simulated image, in Pull mode) and its MachineDeployment in
// Cluster cluster.
func (d *demo) createWorkers(ctx context.Context, cluster string, w capiWorkers) error {
	tmpl := &bootstrapv1.WinnodeConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: w.template, Namespace: testenv.CAPINamespace}}
	tmpl.Spec.Template.Spec.Mode = bootstrapv1.ModePush
	md, infra := testenv.WinsimMachineDeployment(cluster, w.deployment, int32(w.machines), testenv.WinnodeConfigTemplateBootstrap(w.template))
	if w.mode == capiModePull {
		tmpl.Spec.Template.Spec.Mode = bootstrapv1.ModePull
		if err := d.addImage(infra); err != nil {
			return err
		}
	}
	for _, o := range []client.Object{tmpl, infra, md} {
		if err := d.mapiClient.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	how := "the operator configures them over SSH"
	if w.mode == capiModePull {
		how = "their bootstrap data joins them by itself"
	}
	d.say("created MachineDeployment %s/%s with %s bootstrapped by WinnodeConfigTemplate %s (mode %s); Cluster API provisions them, %s\n",
		testenv.CAPINamespace, w.deployment, hostCount(w.machines, "Windows Machine"), w.template, tmpl.Spec.Template.Spec.Mode, how)
	return nil
}

// addImage writes the simulated Windows image, as `winnodectl image` writes
// it from the demo's payload, makes the simulated cloud boot it, and has
// infra (the MachineDeployment's WinsimMachineTemplate) boot from it.
func (d *demo) addImage(infra *unstructured.Unstructured) error {
	dir := filepath.Join(d.workdir, "image")
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing an earlier run's image in %s: %w", dir, err)
	}
	if _, err := image.Write(d.payloadDir, dir); err != nil {
		return fmt.Errorf("writing the simulated Windows image: %w", err)
	}
	d.cloud.AddImage(demoImage, dir)
	d.say("wrote the simulated Windows image %s to %s (what `winnodectl image` writes: the agent, the payload, its manifest)", demoImage, dir)
	return unstructured.SetNestedField(infra.Object, demoImage, "spec", "template", "spec", "image")
}

// writeWorkloadKubeconfig writes the workload cluster's kubeconfig, read
// from the Cluster's <cluster>-kubeconfig Secret as Cluster API users do,
// into the work folder (mode 0600: it holds the admin's key).
func (d *demo) writeWorkloadKubeconfig(ctx context.Context) error {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: testenv.CAPINamespace, Name: workloadKubeconfigSecret}
	if err := d.client.Get(ctx, key, secret); err != nil {
		return fmt.Errorf("reading the workload cluster's kubeconfig Secret %s: %w", key, err)
	}
	d.workloadKubeconfig = filepath.Join(d.workdir, demoCluster+".kubeconfig")
	if err := os.WriteFile(d.workloadKubeconfig, secret.Data["value"], 0o600); err != nil {
		return fmt.Errorf("writing the workload cluster's kubeconfig: %w", err)
	}
	d.say("workload cluster's kubeconfig (Secret %s, key value): %s", key, d.workloadKubeconfig)
	return nil
}

// capiSnapshot adds to hosts (the WindowsInstances) the Pull Machines, which
// have none, and takes each Machine's Node from the workload cluster.
func (d *demo) capiSnapshot(ctx context.Context, hosts []view.HostState) ([]view.HostState, error) {
	ready, err := nodesReady(ctx, d.workloadClient)
	if err != nil {
		return nil, fmt.Errorf("the workload cluster: %w", err)
	}
	// A Push Machine's WindowsInstance names its Node in the workload
	// cluster; the listed hosts' Nodes are in the management cluster,
	// under other names.
	for i := range hosts {
		if !hosts[i].NodeReady {
			hosts[i].NodeReady = ready[hosts[i].Node]
		}
	}
	rows, err := view.ListPullRows(ctx, d.client)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		hosts = append(hosts, view.HostState{Name: r.Machine, Address: r.Machine, Hostname: r.ComputerName,
			Phase: r.Stage, Node: r.Node, NodeReady: ready[r.Node], LastError: r.Reason})
	}
	return hosts, nil
}

// nodesReady says of each Node of the cluster c whether it is Ready.
func nodesReady(ctx context.Context, c client.Client) (map[string]bool, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	ready := map[string]bool{}
	for i := range nodes.Items {
		ready[nodes.Items[i].Name] = view.NodeReady(&nodes.Items[i]) == "Ready"
	}
	return ready, nil
}

// capiTryLines are the capi flavor's "try" lines: Cluster API's objects and
// winnodectl status in the management cluster, the Windows nodes in the
// workload cluster (none in the management cluster), and the scaling.
func (d *demo) capiTryLines(self string) string {
	status := "each Pull Machine's stage of its join (no WindowsInstance)"
	removed := "Cluster API drains and deletes its Node in the workload cluster"
	if d.o.capiMode == capiModePush {
		status = "each Machine's WindowsInstance"
		removed = "its host is cleaned before Cluster API deletes its infrastructure"
	}
	here := "none in this one"
	if d.fleet != nil {
		here = "this one has the listed hosts' only"
	}
	return fmt.Sprintf(`
The hosts are SIMULATED (winsim); the control planes and the operator are real.
Management cluster (Cluster API, the operator) kubeconfig: %[1]s
Workload cluster %[2]s (the Windows nodes) kubeconfig: %[3]s
  (the Cluster's Secret %[4]s/%[5]s, key value)

Try, in another terminal:
  export KUBECONFIG=%[1]s
  # Cluster API's view: each Machine Running, linked to its Node in the
  # workload cluster, with the computer name winnode's bootstrap provider gave it.
  kubectl -n %[4]s get machines,winnodeconfigs
  %[6]s status      # %[7]s
  # The Machines' Windows nodes are in the workload cluster, %[11]s.
  kubectl --kubeconfig %[3]s get nodes -o wide
  kubectl get nodes -l kubernetes.io/os=windows
  # More Windows nodes, or fewer; for a removed Machine,
  # %[8]s.
  kubectl -n %[4]s scale machinedeployment %[9]s --replicas %[10]d
`, d.kubeconfig, demoCluster, d.workloadKubeconfig, testenv.CAPINamespace, workloadKubeconfigSecret,
		self, status, removed, demoMachineDeployment, d.o.machines+1, here)
}
