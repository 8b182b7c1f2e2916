package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/logfilter"
	"github.com/winnode/winnode/internal/plan"
)

// logsOptions are winnodectl logs' flags.
type logsOptions struct {
	cluster   clusterFlags
	namespace string
	keyFile   string
	timeout   time.Duration
	user      string
	port      int
	hostKey   string
	since     time.Duration
	tail      int
	follow    bool
	interval  time.Duration
}

func newLogsCommand(s Streams) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs NODE|INSTANCE [SERVICE] [--since DURATION] [--tail N] [-f]",
		Short: "Print a Windows service's log (C:\\var\\log\\<service>\\<service>.log) from a node",
		Long: `Print the log of a service winnode installed on a Windows host: kubelet (the
default), containerd (when winnode manages it), kube-proxy, flanneld,
hybrid-overlay-node, csi-proxy, windows_exporter, or winnode-agent (the
agent's own runs).

While the host's node is Ready the log is read through its kubelet (the API
server's node proxy, /api/v1/nodes/NODE/proxy/logs/, as kubectl get --raw and
oc adm node-logs read it). When it is not, which is when logs are needed
most (a kubelet that never started), or the kubelet cannot be reached, it is
read over SSH by winnode-agent.exe logs, with the key and pinned host key of
winnodectl ssh.

The kubelet serves a file whole: --since and --tail filter here. --since
keeps the lines from that long ago on (lines with no time of their own go
with the line before); --tail keeps the last N lines. -f keeps printing what
is added, also across a rotation.`,
		Example: `  # Why a node is not Ready
  winnodectl logs win-node-1

  # The last 50 lines of kube-proxy's log, and what follows
  winnodectl logs win-node-1 kube-proxy --tail 50 -f

  # The agent's own log of the last hour
  winnodectl logs win-node-1 winnode-agent --since 1h`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return UsageErrorf("logs takes the host and, optionally, a service: winnodectl logs NODE [SERVICE]; see winnodectl logs --help")
			}
			if o.since < 0 || o.tail < -1 || o.interval <= 0 {
				return UsageErrorf("--since must not be negative (got %s), --tail must be a line count or -1 for all (got %d), --interval positive", o.since, o.tail)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			service := plan.KubeletService
			if len(args) == 2 {
				service = args[1]
			}
			return o.run(cmd.Context(), s, args[0], service)
		},
	}
	f := cmd.Flags()
	o.cluster.add(f)
	f.StringVarP(&o.namespace, "namespace", "n", defaultNamespace, "namespace of Secret cloud-private-key (the operator's namespace), for reading over SSH")
	f.StringVar(&o.keyFile, "ssh-key", "", "private key file to use instead of Secret cloud-private-key, for reading over SSH")
	f.DurationVar(&o.timeout, "connect-timeout", 30*time.Second, "bound on connecting and the SSH handshake")
	f.StringVar(&o.user, "user", "Administrator", "account to log in as, for nodes added with winnodectl add (a WindowsInstance says its own)")
	f.IntVar(&o.port, "port", 22, "SSH port, for nodes added with winnodectl add (a WindowsInstance says its own)")
	addHostKeyFlag(cmd, &o.hostKey)
	f.DurationVar(&o.since, "since", 0, "only the lines from this long ago on, such as 10m or 2h (0: all)")
	f.IntVar(&o.tail, "tail", -1, "only the last N lines (-1: all)")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep printing what is added to the log until interrupted")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "with -f, how often the log is read again")
	return cmd
}

// logReader reads a log from `from` on: what it returns starts at offset
// (from, or 0 after a rotation) and the file's size is size.
type logReader func(ctx context.Context, from int64) (text string, offset, size int64, err error)

func (o *logsOptions) run(ctx context.Context, s Streams, target, service string) error {
	filter := logfilter.Options{Since: o.since, Tail: o.tail, Now: time.Now()}
	if err := filter.Check(); err != nil {
		return UsageErrorf("%v", err)
	}
	cfg, err := o.cluster.restConfig()
	if err != nil {
		return err
	}
	c, err := NewClient(cfg)
	if err != nil {
		return err
	}
	inst, err := findInstance(ctx, c, target)
	if errors.Is(err, errNoInstance) {
		inst, err = addedNodeInstance(ctx, cfg, c, target, o.user, o.port, o.hostKey)
	}
	if err != nil {
		return err
	}
	read, closeReader, err := o.reader(ctx, s, cfg, c, inst, service)
	if err != nil {
		return err
	}
	defer closeReader()
	text, _, size, err := read(ctx, 0)
	if err != nil {
		return err
	}
	fmt.Fprint(s.Out, logfilter.Filter(text, filter))
	if !o.follow {
		return nil
	}
	return o.followLog(ctx, s.Out, read, size)
}

// followLog prints what is added to the log every interval until ctx ends.
func (o *logsOptions) followLog(ctx context.Context, out io.Writer, read logReader, size int64) error {
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		text, _, newSize, err := read(ctx, size)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		fmt.Fprint(out, text)
		size = newSize
	}
}

// reader picks how to read the log: through the kubelet while the node is
// Ready and its kubelet answers, else over SSH through the agent.
func (o *logsOptions) reader(ctx context.Context, s Streams, cfg *rest.Config, c client.Client, inst *winnodev1.WindowsInstance, service string) (logReader, func(), error) {
	node := inst.Status.NodeName
	if node != "" && nodeReady(ctx, c, node) {
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		read := kubeletReader(kube, node, service)
		_, _, _, err = read(ctx, 0)
		if err == nil {
			return read, func() {}, nil
		}
		fmt.Fprintf(s.Err, "winnodectl: node %s's kubelet did not serve the log (%v); reading it over SSH\n", node, err)
	} else {
		fmt.Fprintf(s.Err, "winnodectl: %s has no Ready node; reading the log over SSH\n", inst.Name)
	}
	signer, err := loadSigner(ctx, c, o.namespace, o.keyFile)
	if err != nil {
		return nil, nil, WithCode(ExitSSHFailed, err)
	}
	cl, err := connectPinned(ctx, inst, signer, o.timeout)
	if err != nil {
		return nil, nil, WithCode(ExitSSHFailed, err)
	}
	return agentReader(cl, service), func() { _ = cl.Close() }, nil
}

// nodeReady says whether the Node exists and is Ready.
func nodeReady(ctx context.Context, c client.Client, name string) bool {
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return false
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kubeletLogPath is the service's log under the kubelet's /logs/ (which
// serves C:\var\log): kubelet/kubelet.log, hybrid-overlay/hybrid-overlay.log.
func kubeletLogPath(service string) string {
	file := plan.LogFile(service)
	if service == plan.HybridOverlayService {
		file = plan.HybridOverlayLogFile
	}
	return strings.ReplaceAll(strings.TrimPrefix(file, plan.LogRoot+`\`), `\`, "/")
}

// kubeletReader reads the log through the API server's node proxy. The
// kubelet serves the file whole: from is applied here (a file now smaller
// than from was rotated, and is printed from its start).
func kubeletReader(kube kubernetes.Interface, node, service string) logReader {
	return func(ctx context.Context, from int64) (string, int64, int64, error) {
		body, err := kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "logs", kubeletLogPath(service)).DoRaw(ctx)
		if err != nil {
			return "", 0, 0, fmt.Errorf("reading %s through node %s's kubelet: %w", kubeletLogPath(service), node, err)
		}
		size := int64(len(body))
		if from > size {
			from = 0
		}
		return string(body[from:]), from, size, nil
	}
}

// agentReader reads the log over SSH: winnode-agent.exe logs.
func agentReader(cl *host.Client, service string) logReader {
	agent := plan.KDir + `\` + plan.PayloadAgent
	return func(ctx context.Context, from int64) (string, int64, int64, error) {
		var doc plan.LogsDocument
		args := []string{"logs", "--service", service, "--from", fmt.Sprint(from)}
		if err := cl.RunAgent(ctx, agent, args, nil, &doc); err != nil {
			return "", 0, 0, fmt.Errorf("reading %s's log over SSH: %w", service, err)
		}
		return doc.Text, doc.Offset, doc.Size, nil
	}
}

// connectPinned connects with the host key pinned as for winnodectl ssh
// (dialPinned): the instance's status.hostKey, or for a node of winnodectl
// add with none kept, the fingerprint of --host-key; never on first use.
func connectPinned(ctx context.Context, inst *winnodev1.WindowsInstance, signer ssh.Signer, timeout time.Duration) (*host.Client, error) {
	pinned := strings.TrimSpace(inst.Status.HostKey)
	if pinned == "" && inst.Spec.HostKeyFingerprint == "" {
		return nil, fmt.Errorf("WindowsInstance %s has no pinned host key yet (phase %q): the operator pins it on first contact; wait until it has connected, then try again", inst.Name, inst.Status.Phase)
	}
	return host.Connect(ctx, host.Options{
		Address: inst.Spec.Address, Port: int(inst.SSHPort()), User: inst.Spec.Username, Signer: signer,
		PinnedHostKey: pinned, ExpectedFingerprint: inst.Spec.HostKeyFingerprint, DialTimeout: timeout,
	})
}
