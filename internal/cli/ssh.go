package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/wincmd"
)

func newSSHCommand(s Streams) *cobra.Command {
	var (
		cluster   clusterFlags
		namespace string
		keyFile   string
		timeout   time.Duration
		user      string
		port      int
		hostKey   string
	)
	cmd := &cobra.Command{
		Use:   "ssh NODE|ADDRESS [-- COMMAND [ARG...]]",
		Short: "Open an SSH session to a Windows host with the operator's key",
		Long: `Open an interactive SSH session to a Windows host, or run one command there,
as the user and port of its WindowsInstance, with the operator's private key
(Secret cloud-private-key, key private-key.pem, in --namespace) or --ssh-key.

The host is named by its node name, its WindowsInstance's name, or its
address. Its host key must match the key pinned in the WindowsInstance's
status (status.hostKey); a host with no pinned key yet, or presenting another
key, is refused: the check is never skipped. A node added with winnodectl add
has no WindowsInstance: its pinned key is the one add kept in ConfigMap
kube-system/winnode-host-keys (never the Node's own annotation, which the
node can write), or with none kept the fingerprint of --host-key; --user and
--port say how to log in.

COMMAND and its arguments are quoted by the rules of the Windows command line
and handed to the host's default shell (cmd.exe or PowerShell).

Exit status: the remote command's, or 255 when the session could not be
opened (as OpenSSH's ssh), 2 for wrong arguments.`,
		Example: `  # An interactive session on a node
  winnodectl ssh win-node-1

  # One command, by address
  winnodectl ssh 10.0.0.7 -- ipconfig /all

  # The services winnode installed
  winnodectl ssh win-node-1 -- sc.exe query kubelet`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case len(args) == 0:
				return UsageErrorf("ssh needs the host: a node name, WindowsInstance name or address; see winnodectl ssh --help")
			case dash == -1 && len(args) > 1:
				return UsageErrorf("put the command after --, as in: winnodectl ssh %s -- %s", args[0], strings.Join(args[1:], " "))
			case dash > 1:
				return UsageErrorf("ssh takes one host before --, got %q", args[:dash])
			case dash == 0:
				return UsageErrorf("name the host before --: winnodectl ssh NODE -- COMMAND")
			case dash == 1 && len(args) == 1:
				return UsageErrorf("nothing after --: give a command, or leave -- out for an interactive session")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg, err := cluster.restConfig()
			if err != nil {
				return WithCode(ExitSSHFailed, err)
			}
			c, err := NewClient(cfg)
			if err != nil {
				return WithCode(ExitSSHFailed, err)
			}
			inst, err := findInstance(ctx, c, args[0])
			if errors.Is(err, errNoInstance) {
				inst, err = addedNodeInstance(ctx, cfg, c, args[0], user, port, hostKey)
			}
			if err != nil {
				return WithCode(ExitSSHFailed, err)
			}
			signer, err := loadSigner(ctx, c, namespace, keyFile)
			if err != nil {
				return WithCode(ExitSSHFailed, err)
			}
			sess, err := dialPinned(ctx, inst, signer, timeout)
			if err != nil {
				return WithCode(ExitSSHFailed, err)
			}
			defer sess.Close()
			if len(args) > 1 {
				return runRemote(ctx, sess, s, args[1:])
			}
			return interactive(ctx, sess, s)
		},
	}
	cluster.add(cmd.Flags())
	cmd.Flags().StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of Secret cloud-private-key (the operator's namespace)")
	cmd.Flags().StringVar(&keyFile, "ssh-key", "", "private key file to use instead of Secret cloud-private-key (e.g. for hosts joined with winnodectl add)")
	cmd.Flags().DurationVar(&timeout, "connect-timeout", 30*time.Second, "bound on connecting and the SSH handshake")
	cmd.Flags().StringVar(&user, "user", "Administrator", "account to log in as, for nodes added with winnodectl add (a WindowsInstance says its own)")
	cmd.Flags().IntVar(&port, "port", 22, "SSH port, for nodes added with winnodectl add (a WindowsInstance says its own)")
	addHostKeyFlag(cmd, &hostKey)
	return cmd
}

// findInstance finds the one WindowsInstance that target names: its name,
// node name, hostname, FQDN, spec address or a reported address.
func findInstance(ctx context.Context, c client.Client, target string) (*winnodev1.WindowsInstance, error) {
	var list winnodev1.WindowsInstanceList
	if err := c.List(ctx, &list); err != nil {
		if view.NoInstanceAPI(err) {
			// No operator in this cluster: only nodes of winnodectl add.
			return nil, fmt.Errorf("%w: the cluster has no WindowsInstance API", errNoInstance)
		}
		return nil, fmt.Errorf("listing WindowsInstances to find %s: %w", target, err)
	}
	var found []*winnodev1.WindowsInstance
	for i := range list.Items {
		if instanceMatches(&list.Items[i], target) {
			found = append(found, &list.Items[i])
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w has the name, node name or address %q: see `winnodectl status`", errNoInstance, target)
	case 1:
		return found[0], nil
	}
	var names []string
	for _, f := range found {
		names = append(names, f.Name)
	}
	return nil, fmt.Errorf("%q matches several WindowsInstances (%s): name one of them", target, strings.Join(names, ", "))
}

var errNoInstance = errors.New("no WindowsInstance")

// addedNodeInstance stands in a WindowsInstance for a node that winnodectl
// add configured: its address, and the host key add pinned (pins.go) or the
// fingerprint of --host-key.
func addedNodeInstance(ctx context.Context, cfg *rest.Config, c client.Client, target, user string, port int, fingerprint string) (*winnodev1.WindowsInstance, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing Nodes to find %s: %w", target, err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !configuredByWinnode(n) {
			continue
		}
		match := strings.EqualFold(n.Name, target)
		for _, a := range n.Status.Addresses {
			match = match || strings.EqualFold(a.Address, target)
		}
		if match {
			inst := &winnodev1.WindowsInstance{
				Spec:   winnodev1.WindowsInstanceSpec{Address: view.NodeAddress(n), Username: user, Port: int32(port), HostKeyFingerprint: fingerprint},
				Status: winnodev1.WindowsInstanceStatus{NodeName: n.Name, Phase: winnodev1.PhaseReady},
			}
			inst.Name = "node " + n.Name
			kube, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			if err := usePin(ctx, kube, inst, n); err != nil {
				return nil, err
			}
			if fingerprint != "" && inst.Status.HostKeyFingerprint != fingerprint {
				inst.Status.HostKey = "" // --host-key names a new key
			}
			return inst, nil
		}
	}
	return nil, fmt.Errorf("no WindowsInstance, and no Node configured by winnode, has the name or address %q: see `winnodectl status`", target)
}

func instanceMatches(inst *winnodev1.WindowsInstance, target string) bool {
	candidates := []string{inst.Name, inst.Status.NodeName, inst.Status.Hostname, inst.Status.FQDN, inst.Spec.Address}
	candidates = append(candidates, inst.Status.Addresses...)
	for _, c := range candidates {
		// Windows host names and DNS names compare case-insensitively.
		if c != "" && strings.EqualFold(c, target) {
			return true
		}
	}
	return false
}

// loadSigner reads the private key from keyFile, or else from the
// operator's Secret with the operator's own checks (sshkey.LoadSigner).
func loadSigner(ctx context.Context, c client.Client, namespace, keyFile string) (ssh.Signer, error) {
	if keyFile == "" {
		return sshkey.LoadSigner(ctx, c, namespace)
	}
	return readKeyFile(keyFile)
}

// readKeyFile reads an unencrypted SSH private key of a kind the operator
// accepts.
func readKeyFile(keyFile string) (ssh.Signer, error) {
	data, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading --ssh-key %s: %w", keyFile, err)
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, fmt.Errorf("--ssh-key %s is protected by a passphrase; winnodectl needs it unencrypted (ssh-keygen -p -N '' -f %s makes a copy so)", keyFile, keyFile)
		}
		// The parser's message never quotes the key.
		return nil, fmt.Errorf("--ssh-key %s is not an SSH private key (PEM or OpenSSH form): %v", keyFile, err)
	}
	if err := checkKeyStrength(signer.PublicKey()); err != nil {
		return nil, fmt.Errorf("--ssh-key %s: %w", keyFile, err)
	}
	return signer, nil
}

// dialPinned connects to inst's host and accepts only the host key pinned in
// its status.
// its status, or with none (a node of winnodectl add with no kept pin) only a
// key of the fingerprint --host-key names.
func dialPinned(ctx context.Context, inst *winnodev1.WindowsInstance, signer ssh.Signer, timeout time.Duration) (*ssh.Client, error) {
	if fp := inst.Spec.HostKeyFingerprint; strings.TrimSpace(inst.Status.HostKey) == "" && fp != "" {
		return dial(ctx, inst, signer, timeout, func(addr string, key ssh.PublicKey) error {
			if got := ssh.FingerprintSHA256(key); got != fp {
				return fmt.Errorf("host %s presented host key %s, but --host-key expects %s: the host was reinstalled or someone is in the middle", addr, got, fp)
			}
			return nil
		}, nil)
	}
	if strings.TrimSpace(inst.Status.HostKey) == "" {
		return nil, fmt.Errorf("WindowsInstance %s has no pinned host key yet (phase %q): the operator pins it on first contact; wait until it has connected, then try again", inst.Name, inst.Status.Phase)
	}
	pinned, _, _, _, err := ssh.ParseAuthorizedKey([]byte(inst.Status.HostKey))
	if err != nil {
		return nil, fmt.Errorf("WindowsInstance %s: status.hostKey is not an SSH public key: %v", inst.Name, err)
	}
	check := func(addr string, key ssh.PublicKey) error {
		if err := ssh.FixedHostKey(pinned)(addr, nil, key); err != nil {
			return fmt.Errorf("host %s presented host key %s, but WindowsInstance %s pins %s: the host was reinstalled or someone is in the middle; if the change is expected, clear status.hostKey and let the operator pin the new key", addr, ssh.FingerprintSHA256(key), inst.Name, ssh.FingerprintSHA256(pinned))
		}
		return nil
	}
	// Ask for the kind of key that was pinned: a host has several.
	return dial(ctx, inst, signer, timeout, check, hostKeyAlgorithms(pinned))
}

// dial connects to inst's host, accepting the host key check accepts.
func dial(ctx context.Context, inst *winnodev1.WindowsInstance, signer ssh.Signer, timeout time.Duration, check func(addr string, key ssh.PublicKey) error, algorithms []string) (*ssh.Client, error) {
	port := int(inst.Spec.Port)
	if port == 0 {
		port = 22
	}
	addr := net.JoinHostPort(inst.Spec.Address, strconv.Itoa(port))
	config := &ssh.ClientConfig{
		User: inst.Spec.Username,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			return check(addr, key)
		},
		HostKeyAlgorithms: algorithms,
		Timeout:           timeout,
	}
	dialCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dialCtx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s (WindowsInstance %s): %w", addr, inst.Name, err)
	}
	stop := context.AfterFunc(dialCtx, func() { _ = conn.Close() })
	defer stop()
	sc, chans, reqs, err := ssh.NewClientConn(conn, addr, config)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("SSH to %s as %s (WindowsInstance %s): %w", addr, inst.Spec.Username, inst.Name, err)
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

// hostKeyAlgorithms are the algorithms that present a key of k's type.
func hostKeyAlgorithms(k ssh.PublicKey) []string {
	if k.Type() == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{k.Type()}
}

// runRemote runs one command and ends winnodectl with its exit status.
func runRemote(ctx context.Context, c *ssh.Client, s Streams, args []string) error {
	sess, err := c.NewSession()
	if err != nil {
		return WithCode(ExitSSHFailed, fmt.Errorf("opening a session: %w", err))
	}
	defer sess.Close()
	sess.Stdout, sess.Stderr = s.Out, s.Err
	if err := forwardStdin(sess, s.In); err != nil {
		return WithCode(ExitSSHFailed, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = sess.Signal(ssh.SIGTERM); _ = sess.Close() })
	defer stop()
	return remoteExit(ctx, sess.Run(wincmd.Join(args...)))
}

// forwardStdin copies in to the session without making Run wait for in to
// end (a terminal never does).
func forwardStdin(sess *ssh.Session, in io.Reader) error {
	if in == nil {
		return nil
	}
	w, err := sess.StdinPipe()
	if err != nil {
		return fmt.Errorf("opening the session's stdin: %w", err)
	}
	go func() {
		_, _ = io.Copy(w, in)
		_ = w.Close()
	}()
	return nil
}

// remoteExit turns a session's end into winnodectl's exit.
func remoteExit(ctx context.Context, err error) error {
	var exitErr *ssh.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return WithCode(ExitInterrupted, fmt.Errorf("interrupted: %w", context.Cause(ctx)))
	case errors.As(err, &exitErr):
		return silentExit(exitErr.ExitStatus())
	}
	return WithCode(ExitSSHFailed, fmt.Errorf("the session ended without an exit status: %w", err))
}

// interactive opens a shell, with a terminal when stdin is one.
func interactive(ctx context.Context, c *ssh.Client, s Streams) error {
	sess, err := c.NewSession()
	if err != nil {
		return WithCode(ExitSSHFailed, fmt.Errorf("opening a session: %w", err))
	}
	defer sess.Close()
	sess.Stdout, sess.Stderr = s.Out, s.Err

	if f, ok := s.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fd := int(f.Fd())
		w, h, err := term.GetSize(fd)
		if err != nil {
			w, h = 80, 24
		}
		if err := sess.RequestPty("xterm-256color", h, w, ssh.TerminalModes{ssh.ECHO: 1}); err != nil {
			return WithCode(ExitSSHFailed, fmt.Errorf("the host refused a terminal: %w", err))
		}
		state, err := term.MakeRaw(fd)
		if err != nil {
			return WithCode(ExitSSHFailed, fmt.Errorf("putting the local terminal in raw mode: %w", err))
		}
		defer term.Restore(fd, state)
		stopResize := followWindowSize(fd, sess)
		defer stopResize()
	}
	if err := forwardStdin(sess, s.In); err != nil {
		return WithCode(ExitSSHFailed, err)
	}
	if err := sess.Shell(); err != nil {
		return WithCode(ExitSSHFailed, fmt.Errorf("the host refused an interactive shell (simulated hosts have none: pass a command after --): %w", err))
	}
	stop := context.AfterFunc(ctx, func() { _ = sess.Close() })
	defer stop()
	return remoteExit(ctx, sess.Wait())
}
