//go:build linux

package demo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/config"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/controller"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/machineapi"
	"github.com/winnode/winnode/internal/winsim"
)

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
	hosts, err := view.ReadHostStates(ctx, d.client, func(inst *winnodev1.WindowsInstance) *host.Progress {
		d.mu.Lock()
		defer d.mu.Unlock()
		if u, ok := d.uploads[inst.Name]; ok && u.step == inst.Status.Step {
			return &u.progress
		}
		return nil
	})
	if err != nil || d.o.flavor != flavorCAPI {
		return hosts, err
	}
	return d.capiSnapshot(ctx, hosts)
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
// The capi flavor's Machines are nodes of the workload cluster.
func (d *demo) windowsNodes(ctx context.Context, c client.Client) ([]view.NodeRow, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{corev1.LabelOSStable: "windows"}); err != nil {
		return nil, fmt.Errorf("listing Windows nodes: %w", err)
	}
	var rows []view.NodeRow
	for i := range nodes.Items {
		rows = append(rows, view.NewNodeRow(&nodes.Items[i]))
	}
	return rows, nil
}

// printNodes prints the Windows nodes of the cluster c.
func (d *demo) printNodes(ctx context.Context, c client.Client) {
	if rows, err := d.windowsNodes(ctx, c); err != nil {
		fmt.Fprintf(d.s.Out, "(listing the nodes failed: %v)\n", err)
	} else {
		_ = view.WriteNodeTable(d.s.Out, rows, time.Now())
	}
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
	first := d.hosts()[0]
	self, _ := os.Executable()
	if self == "" || strings.Contains(self, "go-build") {
		self = "go run ./cmd/winnodectl"
	}
	if d.o.flavor == flavorCAPI {
		fmt.Fprintf(out, "Workload cluster %s:\n", demoCluster)
		d.printNodes(ctx, d.workloadClient)
		if d.fleet != nil {
			fmt.Fprintln(out, "\nManagement cluster (the listed hosts):")
			d.printNodes(ctx, d.client)
		}
		fmt.Fprint(out, d.capiTryLines(self))
	} else {
		d.printNodes(ctx, d.client)
		d.printTryLines(self, first)
	}
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

// printTryLines prints the kubeconfig and the "try" lines of the plain and
// openshift flavors, whose Windows nodes are in the one cluster.
func (d *demo) printTryLines(self string, first *winsim.Host) {
	fmt.Fprintf(d.s.Out, `
The hosts are SIMULATED (winsim); the control plane and the operator are real.
Kubeconfig: %[1]s

Try, in another terminal:
  export KUBECONFIG=%[1]s
  kubectl get windowsinstances          # phase, node, version of every host
  kubectl get nodes -o wide
  %[2]s status
  %[2]s ssh %[3]s -- powershell -Command "Get-Service kubelet, kube-proxy, containerd"
  %[2]s ssh %[3]s -- "C:\k\containerd\containerd.exe" --version
  %[2]s logs %[3]s --tail 20            # the kubelet's log (C:\var\log\kubelet)
%[4]s
%[5]s
`, d.kubeconfig, self, strings.ToLower(first.Hostname()), d.sampleLines(), d.changeLines())
}

// changeLines are the "try" lines that add and remove nodes.
func (d *demo) changeLines() string {
	var lines string
	if d.fleet != nil {
		lines += fmt.Sprintf(`  # Take a host out: its node is drained and deleted, the host cleaned.
  kubectl -n %s patch configmap %s --type json -p '[{"op":"remove","path":"/data/%s"}]'
`, controller.DefaultNamespace, instancesConfigMap, d.fleet.Hosts[0].IP())
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
  kubectl logs -l app=win-webserver     # through the Windows node's kubelet
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
	if d.o.flavor != flavorCAPI {
		return
	}
	pull, err := view.ListPullRows(ctx, d.client)
	if err != nil {
		fmt.Fprintf(d.s.Out, "(listing the Pull Machines failed: %v)\n", err)
		return
	}
	fmt.Fprintln(d.s.Out)
	_ = view.WritePullTable(d.s.Out, pull, time.Now())
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
