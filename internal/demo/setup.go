//go:build linux

package demo

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/controller"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// setUp starts the control plane, the simulated hosts and the operator,
// and lists the hosts in the ConfigMap or creates the MachineSet.
func (d *demo) setUp(ctx context.Context) error {
	d.printBanner()
	if err := d.makeWorkdir(); err != nil {
		return err
	}
	fmt.Fprintf(d.s.Out, "Work folder: %s (operator.log, winsim.log)\n\n", d.workdir)
	if err := d.openLogs(); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(d.logFile, nil))

	payloadDir, standinBin, err := d.buildPayload()
	if err != nil {
		return err
	}
	d.payloadDir = payloadDir
	if ctx.Err() != nil {
		return ctx.Err()
	}
	hostsDir := filepath.Join(d.workdir, "hosts")
	if err := d.startControlPlane(ctx, hostsDir, standinBin, logger); err != nil {
		return err
	}
	if d.o.flavor == flavorCAPI {
		if err := d.startWorkload(ctx); err != nil {
			return err
		}
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
		log:        d.operatorLog,
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

// openLogs opens the work folder's logs: winsim.log for the simulated
// hosts, operator.log for the operator and for the libraries that log
// through process-wide loggers (logs.go), which go there from now on.
func (d *demo) openLogs() error {
	var err error
	if d.logFile, err = os.OpenFile(filepath.Join(d.workdir, "winsim.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return fmt.Errorf("opening the simulated hosts' log: %w", err)
	}
	if d.operatorLog, err = os.OpenFile(filepath.Join(d.workdir, "operator.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return fmt.Errorf("opening the operator's log: %w", err)
	}
	routeLibraryLogs(d.operatorLog)
	return nil
}

// printBanner says what runs where.
func (d *demo) printBanner() {
	what := hostCount(d.o.hosts, "SIMULATED Windows Server "+strings.Join(d.o.builds, "/")+" host")
	switch d.o.flavor {
	case flavorOpenShift:
		what = hostCount(d.o.machines, "SIMULATED Windows Machine") + " of a MachineSet, booted by the OpenShift Machine API's\n    real controllers on a simulated cloud"
	case flavorCAPI:
		what = hostCount(d.o.machines, "SIMULATED Windows Machine") + " of a MachineDeployment (" + d.o.capiMode + " mode), booted by Cluster\n    API's real controllers and a simulated infrastructure provider, joining the workload cluster"
	}
	if d.o.flavor != flavorPlain && d.o.hosts > 0 {
		what += ", and " + hostCount(d.o.hosts, "listed host")
	}
	cluster := "a real Kubernetes control plane"
	switch d.o.flavor {
	case flavorCAPI:
		cluster = "two real Kubernetes control planes, the management cluster and the workload cluster"
	case flavorOpenShift:
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
	d.say("starting the control plane (the first run builds it from source: 11.5 to 34 minutes on 2 cores)")
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
	d.say("building the agent, winnode-service, the stand-in kubelet and the CNI host-local plugin for the simulated hosts (Linux builds; the first time Go compiles them for minutes)")
	var agentBin, serviceBin, hostLocal string
	err = d.sayWhile("building the simulated hosts' programs", func() error {
		// The agent carries the demo's version, the operator's: in Cluster
		// API's Pull mode the agent checks it against the range its
		// operator supports (joinconfig.SupportedAgents), as a release's
		// agent and operator of one version agree.
		if agentBin, err = testenv.BuildVersioned("cmd/winnode-agent", cli.Version); err != nil {
			return fmt.Errorf("building the agent: %w", err)
		}
		if serviceBin, err = testenv.BuildBinary("cmd/winnode-service"); err != nil {
			return fmt.Errorf("building winnode-service: %w", err)
		}
		if standinBin, err = testenv.BuildBinary("cmd/winsim-standin"); err != nil {
			return fmt.Errorf("building the stand-in programs: %w", err)
		}
		if hostLocal, err = testenv.HostLocal(); err != nil {
			return fmt.Errorf("building the CNI host-local plugin: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}
	payloadDir = filepath.Join(d.workdir, "payload")
	// Under make test, the run's shared compressed copies (one demo builds
	// one payload; its tests build several).
	_, err = simpayload.Build(payloadDir, simpayload.Options{AgentBinary: agentBin, ServiceBinary: serviceBin, StandinBinary: standinBin, HostLocalBinary: hostLocal,
		AgentVersion: cli.Version, Cache: os.Getenv(testenv.PayloadCacheEnv)})
	return payloadDir, standinBin, err
}

// sayWhile runs fn, saying every 30 s (d.progressEvery) that what still
// runs and for how long: one line at a steady pace, which CI logs keep
// readable too.
func (d *demo) sayWhile(what string, fn func() error) error {
	done := make(chan struct{})
	stopped := make(chan struct{})
	start := time.Now()
	every := d.progressEvery
	if every == 0 {
		every = 30 * time.Second
	}
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				d.say("%s: still going, %s so far", what, time.Since(start).Round(time.Second))
			}
		}
	}()
	err := fn()
	close(done)
	<-stopped
	return err
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
