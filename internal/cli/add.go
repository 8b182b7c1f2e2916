package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/openshift"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/platform"
)

// Version is winnodectl's version, recorded on the nodes it configures
// (annotation winnode.io/version); set at build time with
// -ldflags "-X github.com/winnode/winnode/internal/cli.Version=v1.2.3".
var Version = "v0.1.0-dev"

// joinNamespace is where winnodectl makes join ServiceAccounts
// (--join-credentials=service-account, or auto on an API server without
// bootstrap-token authentication): kube-system, which every cluster has,
// since without the operator its namespace may not exist.
const joinNamespace = "kube-system"

// hostFlags are the flags that say how to reach one host (add, upgrade,
// remove); engine.go builds the engine all three run from them.
type hostFlags struct {
	cluster clusterFlags
	user    string
	keyFile string
	port    int
	timeout time.Duration
	verbose bool
	// approval: --node-address-cidrs and --service-cidr (add and upgrade
	// only, which approve CSRs; addApprovalFlags).
	approval approvalFlags
	// joinCredentials is --join-credentials, network --network (add and
	// upgrade only).
	joinCredentials string
	network         string
	// platform is --platform (add and upgrade only).
	platform string
	// hybridClusterCIDR is --hybrid-cluster-cidr (add and upgrade only).
	hybridClusterCIDR string
	// logFileSize and logFileAge are --log-file-size and --log-file-age
	// (add and upgrade only); logs what they say, once checked.
	logFileSize, logFileAge string
	logs                    *logrotate.Limits
	// hostKey is --host-key (add only): the SHA256 fingerprint the host
	// key must have from the first connection on.
	hostKey string
	// containerRuntime is --container-runtime (add and upgrade only).
	containerRuntime string
	// minFreeDiskGiB is --min-free-disk-gib (check only).
	minFreeDiskGiB int
	// allowAddresses is --allow-addresses: CIDRs of loopback, link-local
	// or Service-range addresses to connect to all the same.
	allowAddresses string
}

func (f *hostFlags) add(fs *pflag.FlagSet, timeout time.Duration) {
	f.cluster.add(fs)
	fs.StringVar(&f.user, "user", "Administrator", "the Windows administrator account to log in as")
	fs.StringVar(&f.keyFile, "ssh-key", "", "SSH private key the host accepts (required; see winnodectl userdata)")
	fs.IntVar(&f.port, "port", 22, "the host's SSH port")
	fs.DurationVar(&f.timeout, "timeout", timeout, "bound on the whole command")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "also print the configurer's log on stderr")
	fs.StringVar(&f.allowAddresses, "allow-addresses", "", inventory.AllowAddressesHelp)
}

// addresses is the address policy of --allow-addresses, with the Service
// range of --service-cidr (add, upgrade) or kubeadm's default (remove).
func (f *hostFlags) addresses() (inventory.AddressPolicy, error) {
	allowed, err := inventory.ParseCIDRs("allow-addresses", f.allowAddresses)
	if err != nil {
		return inventory.AddressPolicy{}, err
	}
	csr, err := f.approval.policy()
	if err != nil {
		return inventory.AddressPolicy{}, err
	}
	return inventory.AddressPolicy{Allowed: allowed, ServiceCIDRs: csr.ServiceCIDRs, ClusterDomain: csr.ClusterDomain}, nil
}

// check validates the flags and HOST before anything is done, with the
// operator's own check of windows-instances entries (inventory.NewHost), so
// that add accepts exactly the hosts and user names the ConfigMap accepts.
func (f *hostFlags) check(hostArg string) (inventory.Host, error) {
	if f.keyFile == "" {
		return inventory.Host{}, UsageErrorf("--ssh-key FILE is required: the private key the host accepts")
	}
	h, err := f.host(hostArg)
	if err != nil {
		return inventory.Host{}, UsageErrorf("HOST %s with --user %q --port %d: %v", hostArg, f.user, f.port, err)
	}
	policy, err := f.addresses()
	if err != nil {
		return inventory.Host{}, UsageErrorf("%v", err)
	}
	if err := policy.CheckAddress(h.Address); err != nil {
		return inventory.Host{}, UsageErrorf("HOST %s: %v", hostArg, err)
	}
	return h, nil
}

// host is the host at address with the flags' user and port.
func (f *hostFlags) host(address string) (inventory.Host, error) {
	h, err := inventory.NewHost(address, f.user, strconv.Itoa(f.port), f.hostKey)
	if err != nil || f.containerRuntime == "" {
		return h, err
	}
	if h.ContainerRuntime, err = inventory.ParseContainerRuntime(f.containerRuntime); err != nil {
		return h, fmt.Errorf("--container-runtime %w", err)
	}
	return h, nil
}

// session is what add, upgrade and remove work with: the cluster and the key.
type session struct {
	apiServer string
	config    *rest.Config
	kube      kubernetes.Interface
	signer    ssh.Signer
	// apiCert reads the names of the API server's serving certificate,
	// which no node may have (the engine's and the approver's checks).
	apiCert *csrapproval.APIServerCertificate
}

// connect loads the cluster client and the key.
func (f *hostFlags) connect() (*session, error) {
	cfg, err := f.cluster.restConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server at %s: %w", cfg.Host, err)
	}
	signer, err := readKeyFile(f.keyFile)
	if err != nil {
		return nil, err
	}
	return &session{apiServer: cfg.Host, config: cfg, kube: kube, signer: signer, apiCert: &csrapproval.APIServerCertificate{Config: cfg}}, nil
}

// platform resolves --platform (auto: the API server's discovery) and,
// on OpenShift, builds the reader of its configuration objects.
func (sess *session) platform(flag string) (platform.Platform, string, client.Reader, error) {
	p, _ := platform.Parse(flag)
	p, why, err := platform.Resolve(sess.kube.Discovery(), p)
	if err != nil || p != platform.OpenShift {
		return p, why, nil, err
	}
	r, err := openshift.NewReader(sess.config)
	return p, why, r, err
}

func newAddCommand(s Streams) *cobra.Command {
	var (
		hf         hostFlags
		payloadDir string
	)
	cmd := &cobra.Command{
		Use:   "add HOST --ssh-key FILE [--user Administrator] [--port 22]",
		Short: "Make one Windows host a node, without the operator",
		Long: `Make one Windows host a Ready worker node from this machine, with no operator
running: the operator's own steps (the same code), each printed with its
duration:

  connect      SSH with --ssh-key; the host key is trusted on first use and
               kept in ConfigMap kube-system/winnode-host-keys, then checked
  info         winnode-agent.exe info: names, addresses, OS build, and the
               container runtime (containerd must be installed and running);
               on a new host, the agent first runs from the SSH user's
               profile folder and installs itself into a secured C:\k
  credentials  join credentials for this host's kubelet: a bootstrap token,
               or a ServiceAccount token where the API server does not
               accept bootstrap tokens (--join-credentials)
  plan, sync   the plan, and the payload uploaded by hash (only what changed)
  apply        winnode-agent.exe apply: files and services
  join         the kubelet's certificate requests, approved with the
               operator's checks (this host's node name and token only)
  finish       label, annotations, uncordon; the credentials are revoked

HOST is an IPv4 address or DNS name the host is reached at over SSH. The
host must already accept the key (winnodectl userdata prints the script that
sets that up). Running add again on a configured host moves no bytes.

The payload comes from --payload-dir (default $WINNODE_PAYLOAD_DIR, else
./payload, as built by make payload).`,
		Example: `  # Join a host with the default administrator account
  winnodectl add 10.0.0.7 --ssh-key ~/.ssh/winnode

  # Another account and SSH port, a given cluster and payload
  winnodectl add win-02.example.internal --user winadmin --port 2222 \
    --ssh-key ~/.ssh/winnode --kubeconfig ~/.kube/prod --payload-dir ./payload`,
		Args: exactArgs("HOST"),
		RunE: runAddE(s, &hf, &payloadDir, false),
	}
	hf.add(cmd.Flags(), 20*time.Minute)
	hf.approval.add(cmd.Flags())
	addPayloadFlag(cmd, &payloadDir)
	addJoinCredentialsFlag(cmd, &hf)
	addHostKeyFlag(cmd, &hf.hostKey)
	return cmd
}

// runAddE runs add (or, with upgrade, upgrade) for the command's HOST.
func runAddE(s Streams, hf *hostFlags, payloadDir *string, upgrade bool) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		h, err := hf.check(args[0])
		if err != nil {
			return err
		}
		if _, err := bootstrap.ParseMode(hf.joinCredentials); err != nil {
			return UsageErrorf("--join-credentials: %v", err)
		}
		if _, err := configure.ParseNetwork(hf.network); err != nil {
			return UsageErrorf("--network: %v", err)
		}
		if _, err := platform.Parse(hf.platform); err != nil {
			return UsageErrorf("--platform: %v", err)
		}
		if hf.hybridClusterCIDR, err = configure.ParseHybridClusterCIDR(hf.hybridClusterCIDR); err != nil {
			return UsageErrorf("--hybrid-cluster-cidr: %v", err)
		}
		logs, err := logrotate.ParseLimits(hf.logFileSize, hf.logFileAge)
		if err != nil {
			return UsageErrorf("%v", err)
		}
		hf.logs = &logs
		ctx, cancel := context.WithTimeout(cmd.Context(), hf.timeout)
		defer cancel()
		return runAdd(ctx, s, *hf, h, payloadOrDefault(*payloadDir), upgrade)
	}
}

// addJoinCredentialsFlag adds --join-credentials, --network, --platform,
// --hybrid-cluster-cidr, --log-file-size, --log-file-age and
// --container-runtime (add, upgrade).
func addJoinCredentialsFlag(cmd *cobra.Command, hf *hostFlags) {
	cmd.Flags().StringVar(&hf.joinCredentials, "join-credentials", string(bootstrap.ModeAuto),
		"the kubelet's join credentials: auto (a bootstrap token when the API server accepts one, else a ServiceAccount token), bootstrap-token or service-account (docs/credentials.md)")
	cmd.Flags().StringVar(&hf.network, "network", configure.NetworkAuto, configure.NetworkHelp+" (docs/networking.md)")
	cmd.Flags().StringVar(&hf.platform, "platform", string(platform.Auto), platform.Help+" (docs/openshift.md)")
	cmd.Flags().StringVar(&hf.hybridClusterCIDR, "hybrid-cluster-cidr", "", configure.HybridClusterCIDRHelp)
	cmd.Flags().StringVar(&hf.logFileSize, "log-file-size", logrotate.FormatSize(logrotate.Defaults.Size), logrotate.SizeHelp+" (docs/troubleshooting.md)")
	cmd.Flags().StringVar(&hf.logFileAge, "log-file-age", logrotate.Defaults.Age.String(), logrotate.AgeHelp)
	cmd.Flags().StringVar(&hf.containerRuntime, "container-runtime", "managed", inventory.ContainerRuntimeHelp+" (docs/containers.md)")
}

// addPayloadFlag adds --payload-dir. Its default is resolved when the
// command runs (payloadOrDefault), so that --help says the same everywhere.
func addPayloadFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "payload-dir", "", "folder with the payload and its manifest.json (default $WINNODE_PAYLOAD_DIR, else ./payload)")
}

func payloadOrDefault(dir string) string {
	if dir == "" {
		dir = os.Getenv("WINNODE_PAYLOAD_DIR")
	}
	if dir == "" {
		dir = "payload"
	}
	return dir
}

// runAdd configures one host (upgrade: one that add configured before).
func runAdd(ctx context.Context, s Streams, hf hostFlags, h inventory.Host, payloadDir string, upgrade bool) error {
	policy, err := hf.approval.policy()
	if err != nil {
		return err
	}
	manifest, err := payload.Load(payloadDir)
	if err != nil {
		return fmt.Errorf("loading the payload from --payload-dir %s: %w (build it with make payload)", payloadDir, err)
	}
	sess, err := hf.connect()
	if err != nil {
		return err
	}
	address := h.Address
	if owner := instanceFor(ctx, sess, address); owner != "" {
		return fmt.Errorf("%s is WindowsInstance %s, which the operator manages: it configures the host itself (winnodectl status shows where it is)", address, owner)
	}
	inst := newHostInstance(h)
	if err := pinFromNode(ctx, sess.kube, inst); err != nil {
		return err
	}
	verb := "Adding"
	if upgrade {
		if inst.Status.NodeName == "" {
			return fmt.Errorf("no Node has the address %s: winnodectl add has not made it a node yet (use add)", address)
		}
		verb = "Upgrading"
		fmt.Fprintf(s.Out, "Node %s runs winnode %s; moving it to %s.\n", inst.Status.NodeName, orDash(nodeVersion(ctx, sess.kube, inst.Status.NodeName)), Version)
	}
	steps := newStepPrinter(s.Out, view.IsTerminal(s.Out), time.Now())
	cfg, err := hf.engine(s, sess, steps)
	if err != nil {
		return err
	}
	cfg.PayloadDir, cfg.Payload = payloadDir, manifest
	if cfg.Metrics, err = metricsStore(sess); err != nil {
		return err
	}
	// Not a status: the pinned host key, kept where nodes cannot write.
	cfg.Persist = persistPin(sess.kube, inst.Status.NodeName)
	fmt.Fprintf(s.Out, "%s %s (user %s, port %d) in the cluster at %s, without the operator:\n", verb, address, h.Username, h.Port, sess.apiServer)
	approver := &csrApprover{kube: sess.kube, inst: inst, policy: policy, apiServer: sess.apiCert, note: steps.note}
	err = cfg.Run(ctx, inst, approver.approve)
	steps.end(err == nil)
	switch {
	case err == nil:
		fmt.Fprintf(s.Out, "Node %s is Ready (%s in all).\n", inst.Status.NodeName, time.Since(steps.start).Round(10*time.Millisecond))
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return WithCode(ExitTimeout, fmt.Errorf("adding %s: not Ready within --timeout %s (last step %s): %w; running add again continues", address, hf.timeout, orDash(inst.Status.Step), err))
	case ctx.Err() != nil:
		return WithCode(ExitInterrupted, fmt.Errorf("adding %s: interrupted at step %s; running add again continues", address, orDash(inst.Status.Step)))
	case meta.IsStatusConditionTrue(inst.Status.Conditions, winnodev1.ConditionHostKeyMismatch) && inst.Spec.HostKeyFingerprint != "":
		c := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionHostKeyMismatch)
		return fmt.Errorf("adding %s: nothing was done: %s (--host-key names the fingerprint to expect)", address, c.Message)
	case meta.IsStatusConditionTrue(inst.Status.Conditions, winnodev1.ConditionHostKeyMismatch):
		// The operator's hint names a WindowsInstance; add pins elsewhere.
		return fmt.Errorf("adding %s: the host presented a host key other than the one pinned for node %s (ConfigMap %s/%s); nothing was done. If the host was reinstalled on purpose, name its new key: %s",
			address, inst.Status.NodeName, joinNamespace, hostKeysConfigMap, hostKeyHelp)
	}
	return fmt.Errorf("adding %s: %w; fix the cause and run add again (every step is safe to repeat)", address, err)
}

// metricsStore keeps windows_exporter's CA and the serving certificates of
// the nodes winnodectl adds in joinNamespace (kube-system), as the operator
// keeps its own in winnode-system (docs/metrics.md): Secrets
// windows-exporter-ca and windows-exporter-tls, the CA published in
// ConfigMap windows-exporter-ca. With no operator nothing renews a
// certificate on its own: add and upgrade issue it again when less than a
// third of its 90 days is left, as the operator's check does. This CA on
// OpenShift too: nodes added without the operator are not behind the
// operator's Service windows-exporter, whose name the service CA signs.
func metricsStore(sess *session) (*metricstls.Store, error) {
	c, err := NewClient(sess.config)
	if err != nil {
		return nil, err
	}
	return &metricstls.Store{Client: c, Live: c, Namespace: joinNamespace}, nil
}

// nodeVersion is the winnode version annotated on a Node, or "".
func nodeVersion(ctx context.Context, kube kubernetes.Interface, name string) string {
	node, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return node.Annotations[winnodev1.AnnotationVersion]
}

// newHostInstance is the in-memory WindowsInstance add and remove work on:
// it is never stored in the cluster (no operator should act on it).
func newHostInstance(h inventory.Host) *winnodev1.WindowsInstance {
	return &winnodev1.WindowsInstance{
		ObjectMeta: metav1.ObjectMeta{Name: inventory.InstanceName(h.Address), CreationTimestamp: metav1.Now()},
		Spec: winnodev1.WindowsInstanceSpec{
			Address: h.Address, Username: h.Username, Port: h.Port,
			HostKeyFingerprint: h.HostKeyFingerprint,
			ContainerRuntime:   h.ContainerRuntime,
			Source:             winnodev1.SourceRef{Kind: winnodev1.SourceManual},
		},
	}
}

// pinFromNode finds the Node of an earlier add of this host (by address,
// with the operator's rule: configure.FindNode) and takes its node name,
// UID and the host key pinned for it (pins.go), so that the host key is
// checked rather than trusted again and the engine acts on that Node. A Node winnode did not
// configure (no annotation winnode.io/version) is only named: the engine
// then refuses it unless this host registers it.
func pinFromNode(ctx context.Context, kube kubernetes.Interface, inst *winnodev1.WindowsInstance) error {
	node, err := configure.FindNode(ctx, kube, "", inst.Spec.Address)
	if err != nil || node == nil {
		return err
	}
	inst.Status.NodeName = node.Name
	if err := usePin(ctx, kube, inst, node); err != nil {
		return err
	}
	if _, ok := node.Annotations[winnodev1.AnnotationVersion]; ok {
		inst.Status.NodeUID = string(node.UID)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// logrTo logs the configurer's lines to w when verbose, else nowhere.
func logrTo(w io.Writer, verbose bool) logr.Logger {
	if !verbose {
		return logr.Discard()
	}
	return logr.FromSlogHandler(slog.NewTextHandler(w, nil))
}
