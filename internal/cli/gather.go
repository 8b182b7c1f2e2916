package cli

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/plan"
)

// gatheredServices are the services whose logs gather takes from each
// host (those a host lacks are noted, not an error).
var gatheredServices = []string{
	plan.ContainerdService, plan.KubeletService, plan.KubeProxyService, plan.FlanneldService,
	plan.HybridOverlayService, plan.CSIProxyService, plan.WindowsExporterService, "winnode-agent",
}

type gatherOptions struct {
	cluster   clusterFlags
	namespace string
	keyFile   string
	timeout   time.Duration
	output    string
}

func newGatherCommand(s Streams) *cobra.Command {
	o := &gatherOptions{}
	cmd := &cobra.Command{
		Use:   "gather [--output FILE]",
		Short: "Write one archive with what a support case needs: winnode's objects, events, the operator's log, each host's service logs and agent state",
		Long: `Write a gzipped tar archive of what tells why a Windows node is not as it
should be, as OpenShift's must-gather does for a cluster:

  cluster/windowsinstances.yaml   every WindowsInstance
  cluster/nodes.yaml              the Windows Nodes
  cluster/events.yaml             the events of WindowsInstances and Windows Nodes
  cluster/windows-instances.yaml  the ConfigMap of hosts (in --namespace)
  operator/POD_CONTAINER.log      the log of each container in --namespace
  hosts/INSTANCE/info.json        winnode-agent info: the agent's view and state
  hosts/INSTANCE/SERVICE.log      the end of each service's log (at most 4 MiB)

Hosts are reached over SSH as winnodectl ssh reaches them (the operator's
key, the pinned host key). A host that cannot be reached gets
hosts/INSTANCE/UNREACHABLE.txt saying why; the archive is still written.
No Secret is read into the archive.`,
		Example: `  winnodectl gather --output case-1234.tar.gz`,
		Args:    NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), s)
		},
	}
	f := cmd.Flags()
	o.cluster.add(f)
	f.StringVarP(&o.namespace, "namespace", "n", defaultNamespace, "the operator's namespace (its pods' logs, Secret cloud-private-key, ConfigMap windows-instances)")
	f.StringVar(&o.keyFile, "ssh-key", "", "private key file to use instead of Secret cloud-private-key")
	f.DurationVar(&o.timeout, "connect-timeout", 30*time.Second, "bound on connecting to each host")
	f.StringVar(&o.output, "output", "", "the archive to write (default: winnode-gather-TIME.tar.gz in this folder)")
	return cmd
}

func (o *gatherOptions) run(ctx context.Context, s Streams) error {
	if o.output == "" {
		o.output = "winnode-gather-" + time.Now().UTC().Format("20060102-150405") + ".tar.gz"
	}
	cfg, err := o.cluster.restConfig()
	if err != nil {
		return err
	}
	c, err := NewClient(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(o.output, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("creating the archive: %w", err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	a := &archive{tw: tar.NewWriter(gz), now: time.Now()}
	var list winnodev1.WindowsInstanceList
	if err := c.List(ctx, &list); err != nil {
		a.note("cluster/windowsinstances.ERROR.txt", err)
	}
	a.yaml("cluster/windowsinstances.yaml", &list)
	o.gatherCluster(ctx, a, kube)
	o.gatherHosts(ctx, s, a, c, list.Items)
	if a.err != nil {
		return fmt.Errorf("writing the archive %s: %w", o.output, a.err)
	}
	if err := a.tw.Close(); err != nil {
		return fmt.Errorf("writing the archive %s: %w", o.output, err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("writing the archive %s: %w", o.output, err)
	}
	fmt.Fprintf(s.Out, "wrote %s (%d files)\n", o.output, a.files)
	return f.Close()
}

// gatherCluster adds the Windows Nodes, their and the instances' events,
// the ConfigMap of hosts and the logs of the operator's pods.
func (o *gatherOptions) gatherCluster(ctx context.Context, a *archive, kube kubernetes.Interface) {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: corev1.LabelOSStable + "=windows"})
	if err != nil {
		a.note("cluster/nodes.ERROR.txt", err)
	} else {
		a.yaml("cluster/nodes.yaml", nodes)
	}
	if events, err := kube.CoreV1().Events("").List(ctx, metav1.ListOptions{}); err != nil {
		a.note("cluster/events.ERROR.txt", err)
	} else {
		windows := map[string]bool{}
		if nodes != nil {
			for _, n := range nodes.Items {
				windows[n.Name] = true
			}
		}
		kept := events.Items[:0]
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "WindowsInstance" || (e.InvolvedObject.Kind == "Node" && windows[e.InvolvedObject.Name]) {
				kept = append(kept, e)
			}
		}
		events.Items = kept
		a.yaml("cluster/events.yaml", events)
	}
	if cm, err := kube.CoreV1().ConfigMaps(o.namespace).Get(ctx, inventory.InstancesConfigMap, metav1.GetOptions{}); err == nil {
		a.yaml("cluster/windows-instances.yaml", cm)
	}
	pods, err := kube.CoreV1().Pods(o.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		a.note("operator/ERROR.txt", err)
		return
	}
	for _, p := range pods.Items {
		for _, ctr := range p.Spec.Containers {
			name := fmt.Sprintf("operator/%s_%s.log", p.Name, ctr.Name)
			logs, err := kube.CoreV1().Pods(o.namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ctr.Name}).DoRaw(ctx)
			if err != nil {
				a.note(name+".ERROR.txt", err)
				continue
			}
			a.add(name, logs)
		}
	}
}

// gatherHosts adds each host's agent info and service logs; a host that
// cannot be reached gets a note.
func (o *gatherOptions) gatherHosts(ctx context.Context, s Streams, a *archive, c client.Client, instances []winnodev1.WindowsInstance) {
	signer, err := loadSigner(ctx, c, o.namespace, o.keyFile)
	if err != nil {
		a.note("hosts/ERROR.txt", fmt.Errorf("no host was asked: %w", err))
		return
	}
	for i := range instances {
		inst := &instances[i]
		dir := "hosts/" + inst.Name + "/"
		cl, err := connectPinned(ctx, inst, signer, o.timeout)
		if err != nil {
			fmt.Fprintf(s.Err, "winnodectl: host %s (%s) skipped: %v\n", inst.Name, inst.Spec.Address, err)
			a.note(dir+"UNREACHABLE.txt", fmt.Errorf("host %s (%s) could not be reached: %w", inst.Name, inst.Spec.Address, err))
			continue
		}
		gatherHost(ctx, a, cl, dir)
		_ = cl.Close()
	}
}

// gatherHost adds one host's agent info and service logs.
func gatherHost(ctx context.Context, a *archive, cl *host.Client, dir string) {
	agent := plan.KDir + `\` + plan.PayloadAgent
	var info json.RawMessage
	if err := cl.RunAgent(ctx, agent, []string{"info"}, nil, &info); err != nil {
		a.note(dir+"info.ERROR.txt", err)
	} else {
		a.add(dir+"info.json", info)
	}
	for _, service := range gatheredServices {
		var doc plan.LogsDocument
		if err := cl.RunAgent(ctx, agent, []string{"logs", "--service", service}, nil, &doc); err != nil {
			a.note(dir+service+".log.ERROR.txt", err)
			continue
		}
		a.add(dir+service+".log", []byte(doc.Text))
	}
}

// archive is the tar archive being written.
type archive struct {
	tw    *tar.Writer
	now   time.Time
	files int
	err   error
}

func (a *archive) add(name string, data []byte) {
	if a.err != nil {
		return
	}
	hdr := &tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: a.now, Typeflag: tar.TypeReg}
	if a.err = a.tw.WriteHeader(hdr); a.err == nil {
		_, a.err = a.tw.Write(data)
	}
	a.files++
}

func (a *archive) note(name string, err error) {
	a.add(name, []byte(strings.TrimSpace(err.Error())+"\n"))
}

func (a *archive) yaml(name string, v any) {
	data, err := yaml.Marshal(v)
	if err != nil {
		a.note(name+".ERROR.txt", err)
		return
	}
	a.add(name, data)
}
