package standin

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/types"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/simscm"
)

// kubeletFlags are the kubelet flags the stand-in uses; it accepts exactly
// the real kubelet's (flags.go).
type kubeletFlags struct {
	config, bootstrapKubeconfig, kubeconfig, certDir string
	hostnameOverride, nodeIP                         string
	nodeLabels                                       map[string]string
	registerWithTaints                               string
	windowsService                                   bool
	verbosity                                        int
	containerRuntimeEndpoint, priorityClass          string
	cloudProvider, version                           string
}

// kubeletFlagSet is the real kubelet's flag set with the stand-in's flags
// bound to f.
func kubeletFlagSet(f *kubeletFlags) (*pflag.FlagSet, error) {
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	// As the kubelet's: --cert_dir is --cert-dir (cliflag.WordSepNormalizeFunc).
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
	fs.StringVar(&f.config, "config", "", "path to the KubeletConfiguration file")
	fs.StringVar(&f.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig used to get a client certificate")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for the API server")
	fs.StringVar(&f.certDir, "cert-dir", `C:\var\lib\kubelet\pki`, "folder of the TLS certificates")
	fs.StringVar(&f.hostnameOverride, "hostname-override", "", "name of the node instead of the hostname")
	fs.StringVar(&f.nodeIP, "node-ip", "", "IP address of the node")
	fs.StringToStringVar(&f.nodeLabels, "node-labels", nil, "labels to add when registering the node")
	fs.StringVar(&f.registerWithTaints, "register-with-taints", "", "taints to add when registering the node (key=value:Effect,...)")
	fs.BoolVar(&f.windowsService, "windows-service", false, "run as a Windows service")
	fs.IntVarP(&f.verbosity, "v", "v", 0, "log verbosity")
	fs.StringVar(&f.containerRuntimeEndpoint, "container-runtime-endpoint", "", "container runtime endpoint")
	fs.StringVar(&f.priorityClass, "windows-priorityclass", "NORMAL_PRIORITY_CLASS", "priority class of the kubelet process")
	fs.StringVar(&f.cloudProvider, "cloud-provider", "", "cloud provider (external or empty)")
	fs.StringVar(&f.version, "version", "false", "print the version and quit")
	fs.Lookup("version").NoOptDefVal = "true"
	return strictPFlags(Kubelet, fs)
}

// parseKubeletFlags parses the command line as the kubelet does: every
// flag first ("failed to parse kubelet flag: ..." for one it refuses), then
// no other argument.
func parseKubeletFlags(args []string) (*kubeletFlags, error) {
	f := &kubeletFlags{}
	fs, err := kubeletFlagSet(f)
	if err != nil {
		return nil, err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("failed to parse kubelet flag: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unknown command %+s", fs.Args()[0])
	}
	if f.version != "false" {
		return f, nil
	}
	return f, f.validate()
}

var priorityClasses = []string{"IDLE_PRIORITY_CLASS", "BELOW_NORMAL_PRIORITY_CLASS", "NORMAL_PRIORITY_CLASS",
	"ABOVE_NORMAL_PRIORITY_CLASS", "HIGH_PRIORITY_CLASS", "REALTIME_PRIORITY_CLASS"}

func (f *kubeletFlags) validate() error {
	if !slices.Contains(priorityClasses, f.priorityClass) {
		return fmt.Errorf("--windows-priorityclass %q: want one of %s", f.priorityClass, strings.Join(priorityClasses, ", "))
	}
	if f.cloudProvider != "" && f.cloudProvider != "external" {
		return fmt.Errorf("--cloud-provider %q: unknown cloud provider; only \"external\" is supported", f.cloudProvider)
	}
	if f.nodeIP != "" {
		for _, ip := range strings.Split(f.nodeIP, ",") {
			if net.ParseIP(ip) == nil {
				return fmt.Errorf("--node-ip %q: not an IP address", ip)
			}
		}
	}
	if err := validateNodeLabels(f.nodeLabels); err != nil {
		return err
	}
	_, err := parseTaints(f.registerWithTaints)
	return err
}

// validateNodeLabels refuses what the kubelet refuses in --node-labels:
// invalid keys or values, and labels in the kubernetes.io and k8s.io
// namespaces that a kubelet may not set on its own Node.
func validateNodeLabels(labels map[string]string) error {
	unknown := sets.New[string]()
	var invalid []string
	for k, v := range labels {
		ns := ""
		if i := strings.Index(k, "/"); i >= 0 {
			ns = k[:i]
		}
		isK8s := ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
		if isK8s && !kubeletapis.IsKubeletLabel(k) {
			unknown.Insert(k)
		}
		for _, e := range validation.IsQualifiedName(k) {
			invalid = append(invalid, fmt.Sprintf("%q: %s", k, e))
		}
		for _, e := range validation.IsValidLabelValue(v) {
			invalid = append(invalid, fmt.Sprintf("%q=%q: %s", k, v, e))
		}
	}
	if unknown.Len() > 0 {
		return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %v\n--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) or be in the specifically allowed set (%s)",
			sets.List(unknown), strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))
	}
	if len(invalid) > 0 {
		slices.Sort(invalid)
		return fmt.Errorf("invalid node labels: %s", strings.Join(invalid, "; "))
	}
	return nil
}

// parseTaints reads --register-with-taints: key[=value]:Effect, comma
// separated.
func parseTaints(s string) ([]corev1.Taint, error) {
	if s == "" {
		return nil, nil
	}
	var out []corev1.Taint
	for _, spec := range strings.Split(s, ",") {
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("--register-with-taints: invalid taint spec %q: want key[=value]:Effect", spec)
		}
		switch corev1.TaintEffect(effect) {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("--register-with-taints: invalid taint effect %q in %q: want NoSchedule, PreferNoSchedule or NoExecute", effect, spec)
		}
		key, value, _ := strings.Cut(kv, "=")
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("--register-with-taints: invalid taint key %q: %s", key, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return nil, fmt.Errorf("--register-with-taints: invalid taint value %q: %s", value, strings.Join(errs, "; "))
		}
		out = append(out, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
	}
	return out, nil
}

// loadKubeletConfig reads the KubeletConfiguration file and refuses what the
// stand-in refuses on Windows. Unset fields keep their zero value; the
// Windows-specific ones are checked only when set, as a kubelet
// configuration written for Windows sets them explicitly.
func loadKubeletConfig(file string) (*kubeletconfig.KubeletConfiguration, []string, error) {
	cfg := &kubeletconfig.KubeletConfiguration{}
	if file == "" {
		return cfg, nil, nil
	}
	p, err := hostPath(file)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to load kubelet config file, path: %s, error: %w", file, err)
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, nil, fmt.Errorf("failed to decode kubelet config file %s: %w", file, err)
	}
	if tm.APIVersion != kubeletconfig.SchemeGroupVersion.String() || tm.Kind != "KubeletConfiguration" {
		return nil, nil, fmt.Errorf("kubelet config file %s: apiVersion %q kind %q, want %s KubeletConfiguration", file, tm.APIVersion, tm.Kind, kubeletconfig.SchemeGroupVersion)
	}
	var warnings []string
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		// The kubelet decodes leniently and warns about unknown fields.
		warnings = append(warnings, fmt.Sprintf("kubelet config file %s: %v", file, err))
		cfg = &kubeletconfig.KubeletConfiguration{}
		if err := yaml.Unmarshal(data, cfg); err != nil {
			return nil, nil, fmt.Errorf("failed to decode kubelet config file %s: %w", file, err)
		}
	}
	var problems []string
	if cfg.CgroupsPerQOS != nil && *cfg.CgroupsPerQOS {
		problems = append(problems, "cgroupsPerQOS (--cgroups-per-qos) true is not supported on Windows; set cgroupsPerQOS: false")
	}
	if enforced := sets.New(cfg.EnforceNodeAllocatable...).Delete("none"); enforced.Len() > 0 {
		problems = append(problems, fmt.Sprintf("enforceNodeAllocatable (--enforce-node-allocatable) %v is not supported on Windows; set enforceNodeAllocatable: []", cfg.EnforceNodeAllocatable))
	}
	if cfg.SingleProcessOOMKill != nil {
		problems = append(problems, "singleProcessOOMKill is not supported on Windows")
	}
	if cfg.UserNamespaces != nil {
		problems = append(problems, "userNamespaces is not supported on Windows")
	}
	if len(cfg.DefaultPodSysctls) > 0 {
		problems = append(problems, "defaultPodSysctls is not supported on Windows")
	}
	for field, reserved := range map[string]map[string]string{"systemReserved": cfg.SystemReserved, "kubeReserved": cfg.KubeReserved} {
		for name, v := range reserved {
			if _, err := resource.ParseQuantity(v); err != nil {
				problems = append(problems, fmt.Sprintf("%s[%s] %q: %v", field, name, v, err))
			}
		}
	}
	slices.Sort(problems)
	if len(problems) > 0 {
		return nil, warnings, fmt.Errorf("invalid configuration in %s: %s", file, strings.Join(problems, "; "))
	}
	return cfg, warnings, nil
}

// kubeletVersion is the Kubernetes version of the client libraries the
// stand-in is built with (k8s.io/kubelet v0.X.Y is Kubernetes v1.X.Y).
func kubeletVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/kubelet" && strings.HasPrefix(d.Version, "v0.") {
				return "v1." + strings.TrimPrefix(d.Version, "v0.")
			}
		}
	}
	return "v1.37.0"
}

// kubelet is one run of the stand-in kubelet.
type kubelet struct {
	flags    *kubeletFlags
	config   *kubeletconfig.KubeletConfiguration
	log      *logger
	scm      *simscm.Client
	ctd      *containerdClient // the container runtime its endpoint names
	host     simscm.HostInfo
	nodeName string
	nodeIP   string
	taints   []corev1.Taint
	version  string

	restConfig *rest.Config
	client     kubernetes.Interface
	// apiPort is the port of the kubelet's API (kubeletapi.go).
	apiPort int32

	// networkErr is why the runtime's network was last not ready ("" when
	// it is), so that each cause is logged once.
	networkErr string
	// podIPs are the addresses IPAM gave pods, by pod UID (only the pod
	// worker goroutine uses it).
	podIPs map[types.UID]string
	// pullBackOffs: when each pod whose images failed to pull may try
	// again (images.go; only the pod worker goroutine uses it).
	pullBackOffs map[types.UID]pullBackOff
}

func runKubelet(ctx context.Context, args []string) int {
	log := newLogger("kubelet")
	flags, err := parseKubeletFlags(args)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		log.Errorf("command failed: %v", err)
		return 1
	}
	if flags.version != "false" {
		fmt.Printf("Kubernetes %s\n", kubeletVersion())
		return 0
	}
	log.verbose = flags.verbosity
	k := &kubelet{flags: flags, log: log, version: kubeletVersion(), podIPs: map[types.UID]string{}, pullBackOffs: map[types.UID]pullBackOff{}}
	log.Infof("kubelet version %s starting (a simulated kubelet: it registers a node and reports pods, it runs no containers)", k.version)
	if err := k.run(ctx); err != nil {
		if ctx.Err() != nil {
			log.Infof("stop signal received, kubelet exiting")
			return 0
		}
		log.Errorf("failed to run Kubelet: %v", err)
		return 1
	}
	log.Infof("stop signal received, kubelet exiting")
	return 0
}

func (k *kubelet) run(ctx context.Context) error {
	cfg, warnings, err := loadKubeletConfig(k.flags.config)
	for _, w := range warnings {
		k.log.Warningf("%s", w)
	}
	if err != nil {
		return err
	}
	k.config = cfg
	// The kubelet answers the service control manager once its flags and
	// configuration are loaded (cmd/kubelet/app/server.go: run calls
	// initForOS, which calls service.InitService).
	if k.flags.windowsService {
		if err := answerServiceManager(ctx, k.log, "kubelet"); err != nil {
			return fmt.Errorf("failed OS init: %w", err)
		}
	}
	// --register-with-taints wins over the configuration's
	// registerWithTaints, as flags win over the file in the kubelet.
	if k.taints, err = parseTaints(k.flags.registerWithTaints); err != nil {
		return err
	}
	if k.flags.registerWithTaints == "" {
		k.taints = cfg.RegisterWithTaints
	}
	if err := k.checkRuntime(ctx); err != nil {
		return err
	}
	k.nodeName = strings.ToLower(k.flags.hostnameOverride)
	if k.nodeName == "" {
		k.nodeName = strings.ToLower(k.host.Hostname)
	}
	k.nodeIP = strings.Split(k.flags.nodeIP, ",")[0]
	if k.nodeIP == "" {
		k.nodeIP = k.host.DefaultIPv4
	}
	if err := k.ensureClientCredentials(ctx); err != nil {
		return err
	}
	return k.runNode(ctx)
}

// checkRuntime validates the runtime endpoint and needs containerd to
// answer on it, as the kubelet needs the CRI to answer (containerd_api.go).
func (k *kubelet) checkRuntime(ctx context.Context) error {
	endpoint := k.flags.containerRuntimeEndpoint
	if endpoint == "" {
		endpoint = k.config.ContainerRuntimeEndpoint
	}
	if endpoint == "" {
		endpoint = "npipe://./pipe/containerd-containerd"
	}
	ctd, err := dialContainerd(endpoint)
	if err != nil {
		return fmt.Errorf("validate service connection: %v", err)
	}
	c, err := scmClient()
	if err != nil {
		return err
	}
	k.scm, k.ctd = c, ctd
	if k.host, err = c.Host(ctx); err != nil {
		return fmt.Errorf("asking the simulated host about itself: %w", err)
	}
	_, err = ctd.runtime(ctx)
	return err
}
