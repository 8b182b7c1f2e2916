//go:build linux

package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/cloud"
)

// Names the demo creates (contracts with users; see DESIGN.md).
const (
	instancesConfigMap = "windows-instances"
	demoUser           = "Administrator"
)

type demoOptions struct {
	hosts         int
	workdir       string
	kubeconfigOut string
	windowsBuild  string
	builds        []string // windowsBuild, split
	exitWhenReady bool
	readyTimeout  time.Duration
	// bootstrapTokenAuth false starts the API server as OpenShift's runs:
	// hosts then join with ServiceAccount tokens (docs/credentials.md).
	bootstrapTokenAuth bool
	// flavor is plain or openshift (openshift.go); machines is the
	// openshift flavor's MachineSet replicas.
	flavor   string
	machines int
	// capiMode is the capi flavor's --capi-mode: pull or push.
	capiMode string
}

// want is how many Ready Windows nodes the demo waits for.
func (o demoOptions) want() int { return o.hosts + o.machines }

func NewCommand(s cli.Streams) *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run winnode on this machine with simulated Windows hosts",
		Long: `Run everything on this machine: a real Kubernetes control plane (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, built from source by
hack/tools/build-control-plane.sh), --hosts SIMULATED Windows Server hosts
(winsim: Linux processes that answer SSH and SFTP as Windows OpenSSH does,
with a stand-in kubelet that joins the real API server) and the winnode
operator, in this process.

The demo creates namespace winnode-system, the operator's key (Secret
cloud-private-key, a fresh ed25519 key that the simulated hosts accept) and
ConfigMap windows-instances listing the hosts, then shows each host's
progress until all are Ready nodes, prints the nodes, the kubeconfig and what
to try next, and runs until SIGINT (Ctrl-C) or SIGTERM. It then stops
everything it started.

With --flavor capi there are two clusters, as Cluster API has them: the
management cluster runs Cluster API's real core controllers, a simulated
infrastructure provider (Winsim* kinds) whose hosts run their bootstrap
data as cloudbase-init would, and the operator; the workload cluster is a
second control plane, whose kubeconfig is the Cluster's Secret
capi-windows/windows-cluster-kubeconfig (the demo writes it out and prints
its path; --kubeconfig-out is the management cluster's). The demo creates,
in namespace capi-windows, the Cluster and a MachineDeployment of
--machines Windows Machines bootstrapped by winnode's
WinnodeConfigTemplate, whose nodes join the workload cluster. With
--capi-mode pull (the default) the Machines boot from a simulated image of
what winnodectl image writes and their bootstrap data joins them by
itself; with --capi-mode push the operator configures them over SSH.

With --flavor openshift the control plane is configured as an OpenShift 4
cluster is (no bootstrap tokens; OpenShift's CRDs and configuration
objects), the OpenShift Machine API's real controllers (MachineSet,
Machine, node link) run beside it with a provider that boots SIMULATED
hosts on a simulated cloud, and the demo creates a Windows MachineSet of
--machines replicas in openshift-machine-api instead of listing hosts
(--hosts adds listed hosts beside them; default none). Scale the MachineSet
with kubectl to add and remove Windows nodes.

While it runs, type a command and Enter: reboot HOST (a simulated host
reboots: its node goes NotReady and comes back), hosts, help, quit.

Exit codes: 0 stopped by SIGINT/SIGTERM (or Ready, with --exit-when-ready);
1 something failed to start; 2 wrong flags; 3 the hosts were not all Ready
within --ready-timeout (only with --exit-when-ready; otherwise the demo keeps
running so that you can look).`,
		Example: `  # Three simulated hosts, until Ctrl-C
  winnodectl demo

  # Five Windows Server 2022 hosts, and the kubeconfig in a known place
  winnodectl demo --hosts 5 --windows-build 2022 --kubeconfig-out ./demo.kubeconfig

  # Four hosts, 2019 and 2022 in turn: each workload picks its release
  # with RuntimeClass windows-2019 or windows-2022
  winnodectl demo --hosts 4 --windows-build 2019,2022

  # For scripts and CI: stop once every host is a Ready node
  winnodectl demo --exit-when-ready

  # OpenShift: a Windows MachineSet of two Machines, scaled with kubectl
  winnodectl demo --flavor openshift --machines 2

  # Cluster API: a management and a workload cluster, and a Windows
  # MachineDeployment of two Machines that join the workload cluster
  winnodectl demo --flavor capi --machines 2
  winnodectl demo --flavor capi --capi-mode push`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.checkAndRun(cmd, s) },
	}
	f := cmd.Flags()
	f.IntVar(&o.hosts, "hosts", 3, "number of simulated Windows hosts")
	f.StringVar(&o.workdir, "workdir", "", "folder for the hosts' state, the payload and the logs, kept afterwards for a look (default: a temporary folder, removed at the end); each run starts with new hosts")
	f.StringVar(&o.kubeconfigOut, "kubeconfig-out", "", "also write the cluster's admin kubeconfig here, as soon as the API server is up")
	f.StringVar(&o.windowsBuild, "windows-build", "2019", "Windows Server version the simulated hosts report: 2019 or 2022, or a comma list the hosts take in turn (2019,2022)")
	f.BoolVar(&o.exitWhenReady, "exit-when-ready", false, "stop everything and exit once every host is a Ready node (for scripts and CI)")
	f.DurationVar(&o.readyTimeout, "ready-timeout", 10*time.Minute, "how long the hosts may take to become Ready nodes")
	f.BoolVar(&o.bootstrapTokenAuth, "bootstrap-token-auth", true, "start kube-apiserver with bootstrap-token authentication; false starts it as OpenShift's runs, and the hosts join with ServiceAccount tokens")
	f.StringVar(&o.flavor, "flavor", flavorPlain, "plain (a kubeadm-style cluster, hosts listed in windows-instances), openshift (an OpenShift-configured cluster with the Machine API and a Windows MachineSet) or capi (Cluster API with a Windows MachineDeployment)")
	f.IntVar(&o.machines, "machines", 2, "with --flavor openshift or capi: replicas of the Windows MachineSet or MachineDeployment")
	f.StringVar(&o.capiMode, "capi-mode", capiModePull, "with --flavor capi: how the Machines become nodes of the workload cluster: pull (their bootstrap data joins them; the operator never reaches them) or push (the operator configures them over SSH)")
	return cmd
}

// checkAndRun checks the flags, then runs the demo.
func (o *demoOptions) checkAndRun(cmd *cobra.Command, s cli.Streams) error {
	if err := o.checkFlavor(cmd.Flags().Changed("hosts"), cmd.Flags().Changed("machines")); err != nil {
		return err
	}
	if err := o.checkCAPIMode(cmd.Flags().Changed("capi-mode")); err != nil {
		return err
	}
	builds, err := parseBuilds(o.windowsBuild)
	if err != nil {
		return err
	}
	o.builds = builds
	if err := checkKubeconfigOut(o.kubeconfigOut); err != nil {
		return err
	}
	return runDemo(cmd.Context(), s, *o)
}

// checkFlavor checks the flags that depend on --flavor, and gives the
// openshift flavor no listed hosts unless --hosts says otherwise.
func (o *demoOptions) checkFlavor(hostsSet, machinesSet bool) error {
	switch o.flavor {
	case flavorPlain:
		if machinesSet {
			return cli.UsageErrorf("--machines is for --flavor openshift or capi; the plain flavor lists --hosts")
		}
		o.machines = 0
		if o.hosts < 1 || o.hosts > 100 {
			return cli.UsageErrorf("--hosts %d: give 1 to 100 simulated hosts", o.hosts)
		}
	case flavorOpenShift, flavorCAPI:
		if !hostsSet {
			o.hosts = 0
		}
		if o.machines < 0 || o.machines > 20 || o.hosts < 0 || o.hosts > 100 || o.want() == 0 {
			return cli.UsageErrorf("--machines %d, --hosts %d: give 0 to 20 Machines and 0 to 100 listed hosts, at least one in all", o.machines, o.hosts)
		}
	default:
		return cli.UsageErrorf("--flavor %q: give plain, openshift or capi", o.flavor)
	}
	return nil
}

// checkCAPIMode checks --capi-mode, which only the capi flavor has.
func (o *demoOptions) checkCAPIMode(set bool) error {
	if set && o.flavor != flavorCAPI {
		return cli.UsageErrorf("--capi-mode is for --flavor capi")
	}
	if o.capiMode != capiModePull && o.capiMode != capiModePush {
		return cli.UsageErrorf("--capi-mode %q: give pull or push", o.capiMode)
	}
	return nil
}

// demo is one run of `winnodectl demo`: what it started, to stop it all.
type demo struct {
	s     cli.Streams
	o     demoOptions
	start time.Time
	say   func(format string, args ...any)
	// progressEvery is how often a long build says it still runs
	// (sayWhile; 30 s when zero).
	progressEvery time.Duration

	workdir    string
	removeWork bool
	logFile    *os.File // winsim.log
	// operatorLog is operator.log: the operator's, controller-runtime's
	// and client-go's lines (logs.go).
	operatorLog *os.File
	env         *testenv.Env
	kubeconfig  string
	payloadDir  string
	// The capi flavor's workload cluster (capi.go): its control plane, a
	// client, and its kubeconfig as the Cluster's Secret holds it.
	workload           *testenv.Env
	workloadClient     client.Client
	workloadKubeconfig string
	fleet              *winsim.Fleet
	client             client.Client
	operator           *runningOperator
	// The openshift flavor's simulated cloud (openshift.go), and a client
	// that knows the Machine API's types.
	cloud      *cloud.Cloud
	stopCloud  func() error
	mapiClient client.Client

	mu      sync.Mutex
	uploads map[string]uploadReport // instance name → last upload report
	// reboots asked for on the terminal; stop does not wait for them (a
	// closed host does not come back), tests do.
	reboots sync.WaitGroup
}

func runDemo(ctx context.Context, s cli.Streams, o demoOptions) (err error) {
	d := &demo{s: s, o: o, start: time.Now(), uploads: map[string]uploadReport{}}
	d.say = func(format string, args ...any) {
		fmt.Fprintf(s.Out, "%s %s\n", view.Elapsed(time.Since(d.start)), fmt.Sprintf(format, args...))
	}
	defer func() {
		if err != nil && d.removeWork {
			// The logs say what went wrong: keep them.
			d.removeWork = false
		}
		if serr := d.stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	if err := d.setUp(ctx); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(s.Out, "Interrupted while starting; stopping what was started.")
			return nil
		}
		return err
	}
	ready, err := d.waitReady(ctx)
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil:
		fmt.Fprintln(s.Out, "\nInterrupted before every host was Ready; stopping everything.")
		return nil
	case !ready && o.exitWhenReady:
		d.printStatus(ctx)
		return cli.WithCode(cli.ExitTimeout, fmt.Errorf("not every simulated host became a Ready node within %s: see the table above, %s and %s",
			o.readyTimeout, filepath.Join(d.workdir, "operator.log"), filepath.Join(d.workdir, "winsim.log")))
	case !ready:
		fmt.Fprintf(s.Out, "\nNot every host is Ready after %s; the demo keeps running so that you can look (logs in %s).\n", o.readyTimeout, d.workdir)
		d.printStatus(ctx)
	default:
		d.printReady(ctx)
	}
	if o.exitWhenReady {
		fmt.Fprintln(s.Out, "--exit-when-ready: stopping everything.")
		return nil
	}
	d.follow(ctx)
	fmt.Fprintln(s.Out, "\nStopping the operator, the simulated hosts and the control plane…")
	return nil
}

// stop stops everything the demo started, in reverse order: the operator
// (so that it does not react to hosts going away), the simulated hosts
// (and every process they run), the control plane, then the files.
func (d *demo) stop() error {
	var errs []error
	if d.operator != nil {
		errs = append(errs, d.operator.stop())
	}
	if d.stopCloud != nil {
		errs = append(errs, d.stopCloud())
	}
	if d.cloud != nil {
		errs = append(errs, d.cloud.Close())
	}
	if d.fleet != nil {
		errs = append(errs, d.fleet.Close())
	}
	if d.env != nil {
		errs = append(errs, d.env.Stop())
	}
	if d.workload != nil {
		errs = append(errs, d.workload.Stop())
	}
	if d.logFile != nil {
		errs = append(errs, d.logFile.Close())
	}
	if d.operatorLog != nil {
		routeLibraryLogs(nil)
		errs = append(errs, d.operatorLog.Close())
	}
	if d.removeWork {
		errs = append(errs, os.RemoveAll(d.workdir))
	} else if d.workdir != "" {
		fmt.Fprintf(d.s.Out, "The work folder %s is kept (hosts' state, payload, logs).\n", d.workdir)
	}
	// The agent and stand-in builds live in testenv's temporary folder.
	testenv.RemoveBuiltBinaries()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping the demo: %w", err)
	}
	fmt.Fprintln(d.s.Out, "Stopped.")
	return nil
}
