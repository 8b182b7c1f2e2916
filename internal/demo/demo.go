//go:build linux

package demo

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/config"
	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/controller"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/machineapi"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/cloud"
	"github.com/winnode/winnode/internal/winsim/simpayload"
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

With --flavor capi, Cluster API's real core controllers run beside the
control plane, with a simulated infrastructure provider (Winsim* kinds)
whose hosts run their bootstrap data as cloudbase-init would, and the demo
creates a Cluster and a MachineDeployment of --machines Windows Machines
bootstrapped by winnode's WinnodeConfigTemplate in namespace capi-windows.

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

  # Cluster API: a Windows MachineDeployment of two Machines
  winnodectl demo --flavor capi --machines 2`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkFlavor(cmd.Flags().Changed("hosts"), cmd.Flags().Changed("machines")); err != nil {
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
			return runDemo(cmd.Context(), s, o)
		},
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
	return cmd
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

// demo is one run of `winnodectl demo`: what it started, to stop it all.
type demo struct {
	s     cli.Streams
	o     demoOptions
	start time.Time
	say   func(format string, args ...any)

	workdir    string
	removeWork bool
	logFile    *os.File
	env        *testenv.Env
	kubeconfig string
	fleet      *winsim.Fleet
	client     client.Client
	operator   *runningOperator
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

// setUp starts the control plane, the simulated hosts and the operator,
// and lists the hosts in the ConfigMap or creates the MachineSet.
func (d *demo) setUp(ctx context.Context) error {
	d.printBanner()
	if err := d.makeWorkdir(); err != nil {
		return err
	}
	fmt.Fprintf(d.s.Out, "Work folder: %s (operator.log, winsim.log)\n\n", d.workdir)
	logFile, err := os.OpenFile(filepath.Join(d.workdir, "winsim.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening the simulated hosts' log: %w", err)
	}
	d.logFile = logFile
	logger := slog.New(slog.NewTextHandler(d.logFile, nil))

	payloadDir, standinBin, err := d.buildPayload()
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	hostsDir := filepath.Join(d.workdir, "hosts")
	if err := d.startControlPlane(ctx, hostsDir, standinBin, logger); err != nil {
		return err
	}
	if err := d.startHosts(hostsDir, standinBin, logger); err != nil {
		return err
	}
	signer, pemKey, err := newDemoKey()
	if err != nil {
		return err
	}
	for _, h := range d.hosts() {
		if err := h.AuthorizeKey(signer.PublicKey()); err != nil {
			return err
		}
	}
	if err := d.createObjects(ctx, pemKey); err != nil {
		return err
	}

	d.say("starting the operator (log: %s)", filepath.Join(d.workdir, "operator.log"))
	if d.operator, err = startOperator(ctx, operatorOptions{
		config:     d.env.Config,
		namespace:  controller.DefaultNamespace,
		payloadDir: payloadDir,
		logPath:    filepath.Join(d.workdir, "operator.log"),
		progress:   d.recordUpload,
	}); err != nil {
		return err
	}
	if d.o.hosts > 0 {
		if err := d.listHosts(ctx); err != nil {
			return err
		}
	}
	switch {
	case d.o.flavor == flavorCAPI:
		return d.createMachineDeployment(ctx)
	case d.o.machines > 0:
		return d.createMachineSet(ctx)
	}
	return nil
}

// printBanner says what runs where.
func (d *demo) printBanner() {
	what := hostCount(d.o.hosts, "SIMULATED Windows Server "+strings.Join(d.o.builds, "/")+" host")
	switch d.o.flavor {
	case flavorOpenShift:
		what = hostCount(d.o.machines, "SIMULATED Windows Machine") + " of a MachineSet, booted by the OpenShift Machine API's\n    real controllers on a simulated cloud"
	case flavorCAPI:
		what = hostCount(d.o.machines, "SIMULATED Windows Machine") + " of a MachineDeployment, booted by Cluster API's real\n    controllers and a simulated infrastructure provider"
	}
	if d.o.flavor != flavorPlain && d.o.hosts > 0 {
		what += ", and " + hostCount(d.o.hosts, "listed host")
	}
	cluster := "a real Kubernetes control plane"
	if d.o.flavor == flavorOpenShift {
		cluster += ", configured as an OpenShift 4 cluster (no OpenShift runs here)"
	}
	fmt.Fprintf(d.s.Out, `winnode demo: everything runs on this machine.
  - %s: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
  - %s (winsim): Linux processes that answer SSH
    and SFTP as Windows OpenSSH does; the kubelet on them is a stand-in that
    joins the real API server. No Windows runs here.
  - the winnode operator, in this process
`, cluster, what)
}

// startControlPlane starts the control plane (the openshift flavor's, with
// the Machine API and its simulated cloud, when asked) and writes the
// kubeconfig.
func (d *demo) startControlPlane(ctx context.Context, hostsDir, standinBin string, logger *slog.Logger) error {
	opts := testenv.Options{NoBootstrapTokenAuth: !d.o.bootstrapTokenAuth}
	switch d.o.flavor {
	case flavorOpenShift:
		url, err := d.startCloud(hostsDir, standinBin, ovnNetwork, logger)
		if err != nil {
			return err
		}
		opts = testenv.Options{OpenShift: true, MachineAPICloudURL: url}
	case flavorCAPI:
		url, err := d.startCloud(hostsDir, standinBin, "", logger)
		if err != nil {
			return err
		}
		opts.ClusterAPICloudURL = url
	}
	d.say("starting the control plane (the first run builds it from source: several minutes)")
	var err error
	if d.env, err = testenv.Start(ctx, opts); err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	if err := d.writeKubeconfig(); err != nil {
		return err
	}
	d.say("control plane up at %s; kubeconfig %s", d.env.Host, d.kubeconfig)
	if d.client, err = cli.NewClient(d.env.Config); err != nil {
		return err
	}
	switch d.o.flavor {
	case flavorOpenShift:
		d.mapiClient, err = newMachineAPIClient(d)
	case flavorCAPI:
		d.mapiClient, err = newCAPIClient(d)
	}
	return err
}

// startHosts starts the listed hosts, after removing an earlier run's.
func (d *demo) startHosts(hostsDir, standinBin string, logger *slog.Logger) error {
	// Each demo has a new cluster: hosts kept from an earlier run would
	// still hold that cluster's kubelet credentials, so they start afresh.
	if _, err := os.Stat(hostsDir); err == nil {
		d.say("removing the simulated hosts of an earlier run from %s (they belonged to its cluster)", hostsDir)
		if err := os.RemoveAll(hostsDir); err != nil {
			return fmt.Errorf("removing the earlier simulated hosts in %s: %w", hostsDir, err)
		}
	}
	if d.o.hosts == 0 {
		return nil
	}
	d.say("starting %s", hostCount(d.o.hosts, "simulated Windows host"))
	var err error
	if d.fleet, err = winsim.StartFleet(d.o.hosts, winsim.Options{
		StateDir: hostsDir, Builds: d.o.builds,
		StandinBinary: standinBin, Logger: logger,
		// Down for longer than the node monitor's grace period (20s), as a
		// real reboot is, so that the node is seen to go NotReady.
		BootDelay: rebootDowntime,
	}); err != nil {
		return err
	}
	for _, h := range d.fleet.Hosts {
		d.say("  simulated host %s at %s, host key %s", h.Hostname(), h.Addr(), h.Fingerprint())
	}
	return nil
}

// buildPayload builds the simulated hosts' programs (Linux builds of the
// agent, the stand-ins and the CNI host-local plugin) and the payload
// folder the operator copies to them; it returns the folder and the
// stand-in binary.
func (d *demo) buildPayload() (payloadDir, standinBin string, err error) {
	d.say("building the agent, the stand-in kubelet and the CNI host-local plugin for the simulated hosts (Linux builds)")
	agentBin, err := testenv.BuildBinary("cmd/winnode-agent")
	if err != nil {
		return "", "", fmt.Errorf("building the agent: %w", err)
	}
	if standinBin, err = testenv.BuildBinary("cmd/winsim-standin"); err != nil {
		return "", "", fmt.Errorf("building the stand-in programs: %w", err)
	}
	hostLocal, err := testenv.HostLocal()
	if err != nil {
		return "", "", fmt.Errorf("building the CNI host-local plugin: %w", err)
	}
	payloadDir = filepath.Join(d.workdir, "payload")
	_, err = simpayload.Build(payloadDir, simpayload.Options{AgentBinary: agentBin, StandinBinary: standinBin, HostLocalBinary: hostLocal})
	return payloadDir, standinBin, err
}

func (d *demo) makeWorkdir() error {
	if d.o.workdir != "" {
		abs, err := filepath.Abs(d.o.workdir)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return fmt.Errorf("--workdir %s: %w", d.o.workdir, err)
		}
		d.workdir = abs
		return nil
	}
	dir, err := os.MkdirTemp("", "winnode-demo-")
	if err != nil {
		return fmt.Errorf("creating the demo's work folder: %w", err)
	}
	d.workdir, d.removeWork = dir, true
	return nil
}

// writeKubeconfig writes the admin kubeconfig with the certificates inside
// it, so that it works from anywhere: into the work folder and, when asked,
// to --kubeconfig-out.
func (d *demo) writeKubeconfig() error {
	cfg, err := clientcmd.LoadFromFile(d.env.KubeconfigPath)
	if err != nil {
		return fmt.Errorf("reading the control plane's kubeconfig: %w", err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return fmt.Errorf("embedding the certificates in the kubeconfig: %w", err)
	}
	d.kubeconfig = filepath.Join(d.workdir, "kubeconfig")
	if d.o.kubeconfigOut != "" {
		d.kubeconfig = d.o.kubeconfigOut
		if err := os.MkdirAll(filepath.Dir(d.o.kubeconfigOut), 0o755); err != nil {
			return fmt.Errorf("--kubeconfig-out %s: %w", d.o.kubeconfigOut, err)
		}
	}
	// clientcmd.WriteToFile writes with mode 0600: the file holds the
	// admin's private key.
	if err := clientcmd.WriteToFile(*cfg, d.kubeconfig); err != nil {
		return fmt.Errorf("writing the kubeconfig to %s: %w", d.kubeconfig, err)
	}
	return nil
}

// demoContext is the context name of testenv's kubeconfig.
const demoContext = "winnode-testenv"

// checkKubeconfigOut refuses to overwrite a kubeconfig that holds anything
// but an earlier demo's cluster (such as ~/.kube/config).
func checkKubeconfigOut(path string) error {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return cli.UsageErrorf("--kubeconfig-out %s exists and is not a kubeconfig; the demo does not overwrite it: pick another file", path)
	}
	for name := range cfg.Contexts {
		if name != demoContext {
			return cli.UsageErrorf("--kubeconfig-out %s holds other clusters (context %q); the demo would overwrite them: pick another file", path, name)
		}
	}
	return nil
}

// newDemoKey makes the operator's SSH key: ed25519, in OpenSSH's PEM form.
func newDemoKey() (ssh.Signer, []byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "winnode demo operator key")
	if err != nil {
		return nil, nil, err
	}
	return signer, pem.EncodeToMemory(block), nil
}

// createObjects creates the operator's namespace and its key Secret.
func (d *demo) createObjects(ctx context.Context, pemKey []byte) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controller.DefaultNamespace}}
	if err := d.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", controller.DefaultNamespace, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controller.DefaultNamespace, Name: sshkey.PrivateKeySecret},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{sshkey.PrivateKeyKey: pemKey},
	}
	if err := d.client.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", controller.DefaultNamespace, sshkey.PrivateKeySecret, err)
	}
	d.say("created namespace %s and Secret %s (a fresh ed25519 key the simulated hosts accept)", controller.DefaultNamespace, sshkey.PrivateKeySecret)
	return nil
}

// demoBuilds are the Windows Server releases winsim simulates.
var demoBuilds = map[string]bool{"2019": true, "2022": true}

// parseBuilds splits --windows-build's comma list: "2019,2022" gives the
// hosts those releases in turn.
func parseBuilds(list string) ([]string, error) {
	var builds []string
	for _, b := range strings.Split(list, ",") {
		b = strings.TrimSpace(b)
		if !demoBuilds[b] {
			return nil, cli.UsageErrorf("--windows-build %q: simulated hosts run Windows Server 2019 or 2022; give one, or a comma list such as 2019,2022", list)
		}
		builds = append(builds, b)
	}
	return builds, nil
}

// rebootDowntime is how long a simulated host stays down on `reboot`.
const rebootDowntime = 30 * time.Second

// hostCount is "1 host" or "3 hosts".
func hostCount(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// configMapEntry is a windows-instances value: "username=<user>", and
// "port=<n>" on a second line when the port is not 22.
func configMapEntry(user string, port int) string {
	v := "username=" + user
	if port != 22 {
		v += "\nport=" + strconv.Itoa(port)
	}
	return v
}

// listHosts creates ConfigMap windows-instances with every host.
func (d *demo) listHosts(ctx context.Context) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: controller.DefaultNamespace, Name: instancesConfigMap},
		Data:       map[string]string{},
	}
	for _, h := range d.fleet.Hosts {
		cm.Data[h.IP()] = configMapEntry(h.User(), h.Port())
	}
	if err := d.client.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating ConfigMap %s/%s: %w", controller.DefaultNamespace, instancesConfigMap, err)
	}
	d.say("listed %s in ConfigMap %s/%s; the operator takes it from here\n", hostCount(len(d.fleet.Hosts), "host"), controller.DefaultNamespace, instancesConfigMap)
	return nil
}

// uploadReport is an upload's last report, and the step it belongs to
// (info uploads the agent, sync the payload).
type uploadReport struct {
	step     string
	progress host.Progress
}

// recordUpload keeps the last upload report of each instance, for the
// progress view.Bar.
func (d *demo) recordUpload(inst *winnodev1.WindowsInstance, p host.Progress) {
	d.mu.Lock()
	d.uploads[inst.Name] = uploadReport{step: inst.Status.Step, progress: p}
	d.mu.Unlock()
}

// snapshot reads every host's state, with the uploads the operator
// reported.
func (d *demo) snapshot(ctx context.Context) ([]view.HostState, error) {
	return view.ReadHostStates(ctx, d.client, func(inst *winnodev1.WindowsInstance) *host.Progress {
		d.mu.Lock()
		defer d.mu.Unlock()
		if u, ok := d.uploads[inst.Name]; ok && u.step == inst.Status.Step {
			return &u.progress
		}
		return nil
	})
}

// waitReady shows progress until every listed host is a Ready node, the
// timeout passes (false), or ctx ends.
func (d *demo) waitReady(ctx context.Context) (bool, error) {
	disp := view.NewDisplay(d.s.Out, d.start)
	defer disp.Finish()
	deadline := time.Now().Add(d.o.readyTimeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	failures := 0
	for {
		hosts, err := d.snapshot(ctx)
		switch {
		case ctx.Err() != nil:
			return false, nil
		case err != nil:
			// The API server is local; a few failures in a row mean it died.
			if failures++; failures > 25 {
				return false, fmt.Errorf("the control plane stopped answering: %w (its logs are in %s)", err, d.env.Dir)
			}
		default:
			failures = 0
			disp.Show(time.Now(), hosts)
			if allReady(hosts, d.o.want()) {
				return true, nil
			}
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-tick.C:
		}
	}
}

func allReady(hosts []view.HostState, want int) bool {
	n := 0
	for _, h := range hosts {
		if h.Phase == string(winnodev1.PhaseReady) && h.NodeReady {
			n++
		}
	}
	return n >= want
}

// windowsNodes lists the Windows nodes (label kubernetes.io/os=windows).
func (d *demo) windowsNodes(ctx context.Context) ([]view.NodeRow, error) {
	var nodes corev1.NodeList
	if err := d.client.List(ctx, &nodes, client.MatchingLabels{corev1.LabelOSStable: "windows"}); err != nil {
		return nil, fmt.Errorf("listing Windows nodes: %w", err)
	}
	var rows []view.NodeRow
	for i := range nodes.Items {
		rows = append(rows, view.NewNodeRow(&nodes.Items[i]))
	}
	return rows, nil
}

// printReady prints the nodes and what to try next.
func (d *demo) printReady(ctx context.Context) {
	out := d.s.Out
	took := time.Since(d.start).Round(100 * time.Millisecond)
	if d.o.want() == 1 {
		fmt.Fprintf(out, "\nThe simulated Windows host is a Ready node, %s after the start.\n\n", took)
	} else {
		fmt.Fprintf(out, "\nAll %d simulated Windows hosts are Ready nodes, %s after the start.\n\n", d.o.want(), took)
	}
	if rows, err := d.windowsNodes(ctx); err != nil {
		fmt.Fprintf(out, "(listing the nodes failed: %v)\n", err)
	} else {
		_ = view.WriteNodeTable(out, rows, time.Now())
	}
	first := d.hosts()[0]
	self, _ := os.Executable()
	if self == "" || strings.Contains(self, "go-build") {
		self = "go run ./cmd/winnodectl"
	}
	fmt.Fprintf(out, `
The hosts are SIMULATED (winsim); the control plane and the operator are real.
Kubeconfig: %[1]s

Try, in another terminal:
  export KUBECONFIG=%[1]s
  kubectl get windowsinstances          # phase, node, version of every host
  kubectl get nodes -o wide
  %[2]s status
  %[2]s ssh %[3]s -- "C:\Program Files\containerd\containerd.exe" --version
%[4]s
%[5]s
`, d.kubeconfig, self, strings.ToLower(first.Hostname()), d.sampleLines(), d.changeLines())
	if d.o.exitWhenReady {
		return
	}
	if f, ok := d.s.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(out, `Or type here, then Enter:
  reboot %s     reboot a simulated host: its node goes NotReady, then Ready again
  hosts                 the simulated hosts
  quit                  stop everything (as Ctrl-C does)
`, first.IP())
	}
	fmt.Fprintln(out, "\nThe demo runs until Ctrl-C (SIGINT) or SIGTERM; changes to the hosts show below.")
}

// changeLines are the "try" lines that add and remove nodes.
func (d *demo) changeLines() string {
	var lines string
	if d.fleet != nil {
		lines += fmt.Sprintf(`  # Take a host out: its node is drained and deleted, the host cleaned.
  kubectl -n %s patch configmap %s --type json -p '[{"op":"remove","path":"/data/%s"}]'
`, controller.DefaultNamespace, instancesConfigMap, d.fleet.Hosts[0].IP())
	}
	if d.o.flavor == flavorCAPI {
		lines += capiChangeLines(d.o.machines)
	}
	if d.o.flavor == flavorOpenShift {
		lines += fmt.Sprintf(`  # The Machine API's view: each Machine Running, linked to its Node.
  kubectl -n %[1]s get machines -o wide
  # More Windows nodes, or fewer: a removed Machine's host is cleaned
  # before the Machine API powers it off.
  kubectl -n %[1]s scale machineset %[2]s --replicas %[3]d
`, machineapi.Namespace, demoMachineSet, d.o.machines+1)
	}
	return lines
}

// sampleFile is the web server sample the demo writes into its workdir, for
// the hosts' first release.
const sampleFile = "windows-web-server.yaml"

// sampleLines writes config/samples/windows-web-server.yaml for the first
// host's release (the sample is of Windows Server 2019: for 2022 its image
// tag and RuntimeClass change, as the sample's comment says) and returns
// the "try" lines that deploy it.
func (d *demo) sampleLines() string {
	release := d.o.builds[0]
	sample := strings.ReplaceAll(string(config.WindowsWebServer), "2019", release)
	path := filepath.Join(d.workdir, sampleFile)
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		return fmt.Sprintf("\n  (writing the web server sample failed: %v)\n", err)
	}
	lines := fmt.Sprintf(`
  # A Windows Server %[1]s web server (config/samples/%[2]s): RuntimeClass
  # windows-%[1]s places its pods on the Windows Server %[1]s nodes.
  kubectl apply -f %[3]s
  kubectl get pods -l app=win-webserver -o wide
`, release, sampleFile, path)
	for _, other := range d.o.builds {
		if other == release {
			continue
		}
		lines += fmt.Sprintf(`  # The same on Windows Server %[2]s: its image and RuntimeClass change
  # together, and its pods move to the %[2]s nodes.
  sed 's/%[1]s/%[2]s/g' %[3]s | kubectl apply -f -
`, release, other, path)
		break
	}
	return lines
}

// printStatus prints the instance table (on a timeout).
func (d *demo) printStatus(ctx context.Context) {
	rows, err := view.ListInstanceRows(ctx, d.client)
	if err != nil {
		fmt.Fprintf(d.s.Out, "(listing WindowsInstances failed: %v)\n", err)
		return
	}
	fmt.Fprintln(d.s.Out)
	_ = view.WriteInstanceTable(d.s.Out, rows, time.Now())
}

// follow prints each host's changes as lines and answers typed commands,
// until ctx ends or quit is typed.
func (d *demo) follow(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Remember the current state without printing it: only changes follow.
	lines := view.NewLines(d.s.Out, d.start)
	if hosts, err := d.snapshot(ctx); err == nil {
		lines.Remember(time.Now(), hosts)
	}
	if f, ok := d.s.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		go d.readCommands(ctx, f, cancel)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if hosts, err := d.snapshot(ctx); err == nil {
				lines.Show(time.Now(), hosts)
			}
		}
	}
}

// readCommands answers the commands typed on the terminal, until quit or
// the end of input. Reboots run in the background (d.reboots).
func (d *demo) readCommands(ctx context.Context, in io.Reader, quit func()) {
	sc := bufio.NewScanner(in)
	for sc.Scan() && ctx.Err() == nil {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "quit", "exit":
			quit()
			return
		case "hosts":
			for i, h := range d.hosts() {
				fmt.Fprintf(d.s.Out, "  %d  %s  %s  host key %s\n", i+1, h.Hostname(), h.Addr(), h.Fingerprint())
			}
		case "reboot":
			if len(fields) != 2 {
				fmt.Fprintln(d.s.Out, "  reboot HOST: the host's number, name or address (see hosts)")
				continue
			}
			h := d.findHost(fields[1])
			if h == nil {
				fmt.Fprintf(d.s.Out, "  no simulated host %q (see hosts)\n", fields[1])
				continue
			}
			d.say("rebooting simulated host %s (%s): down for %s", h.Hostname(), h.IP(), rebootDowntime)
			d.reboots.Add(1)
			go func() {
				defer d.reboots.Done()
				err := h.Reboot()
				switch {
				case ctx.Err() != nil:
					// The demo is stopping: the host was closed meanwhile.
				case err != nil:
					d.say("reboot of %s failed: %v", h.Hostname(), err)
				default:
					d.say("simulated host %s is up again; its services are starting", h.Hostname())
				}
			}()
		default:
			fmt.Fprintln(d.s.Out, "  commands: reboot HOST, hosts, quit")
		}
	}
}

func (d *demo) findHost(name string) *winsim.Host {
	for i, h := range d.hosts() {
		if name == strconv.Itoa(i+1) || strings.EqualFold(name, h.Hostname()) || name == h.IP() || name == h.Addr() {
			return h
		}
	}
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
	if d.logFile != nil {
		errs = append(errs, d.logFile.Close())
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
