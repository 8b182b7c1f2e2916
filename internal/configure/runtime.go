package configure

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/openshift"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/platform"
	"github.com/winnode/winnode/internal/registries"
)

// The container runtime (docs/containers.md): who runs it (the instance's
// spec.containerRuntime), and, for the plan, the cluster's registries,
// proxy and the proxy's CAs, read from the platform's own objects:
//
//   - openshift: ImageDigestMirrorSets and ImageTagMirrorSets with the
//     global pull secret's credentials, Proxy cluster's status and the CA
//     bundle its spec.trustedCA names (internal/openshift runtime.go);
//   - kubernetes: ConfigMap windows-registries in ConfigNamespace with the
//     credentials of the Secret its winnode.io/registry-credentials
//     annotation names, the operator's own HTTP_PROXY, HTTPS_PROXY and
//     NO_PROXY (Proxy), and the ConfigMap TrustedCAConfigMap names.

// EventReasonRegistriesInvalid is the Warning event of a registry entry
// left out of the hosts' configuration: a ConfigMap key that does not
// parse, a mirror containerd cannot be given, credentials that do not read.
const EventReasonRegistriesInvalid = "RegistriesInvalid"

// runtimeMode is the instance's container runtime: its spec's, else the
// Configurer's default, else Managed.
func (c *Configurer) runtimeMode(inst *winnodev1.WindowsInstance) plan.ContainerRuntime {
	switch {
	case inst.Spec.ContainerRuntime != "":
		return plan.ContainerRuntime(inst.Spec.ContainerRuntime)
	case c.ContainerRuntime != "":
		return plan.ContainerRuntime(c.ContainerRuntime)
	}
	return plan.RuntimeManaged
}

// checkContainerRuntime refuses a host whose container runtime does not
// fit the instance's mode (step info): under Managed a containerd winnode
// did not install is a conflict (ContainerRuntimeConflict); under Existing
// a host without a running containerd has no runtime (NoContainerRuntime).
func (c *Configurer) checkContainerRuntime(inst *winnodev1.WindowsInstance, info *plan.Info) error {
	ctd := info.Containerd
	if c.runtimeMode(inst) == plan.RuntimeManaged {
		if ctd.Present && !ctd.Winnode {
			err := fmt.Errorf("host %s (%s): a containerd winnode did not install is there (service containerd: %s): winnode installs its own under containerRuntime Managed; "+
				"uninstall that one (containerd.exe --unregister-service), or set spec.containerRuntime to Existing to keep it",
				inst.Spec.Address, info.Hostname, orString(ctd.Command, "its command line unknown"))
			SetCondition(inst, winnodev1.ConditionContainerRuntimeConflict, metav1.ConditionTrue, winnodev1.ReasonContainerRuntimeConflict, err.Error())
			SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonContainerRuntimeConflict, err.Error())
			return stepErr(StepInfo, winnodev1.ReasonContainerRuntimeConflict, err)
		}
		removeCondition(inst, winnodev1.ConditionContainerRuntimeConflict)
		return nil
	}
	removeCondition(inst, winnodev1.ConditionContainerRuntimeConflict)
	if !ctd.Present || !ctd.Running {
		state := "not installed"
		if ctd.Present {
			state = "installed but " + strings.ToLower(orString(ctd.State, "not running"))
		}
		err := fmt.Errorf("host %s (%s): the containerd service is %s: under containerRuntime Existing the host's own containerd must run "+
			"(install it and make sure its service runs, or set spec.containerRuntime to Managed and winnode installs one)",
			inst.Spec.Address, info.Hostname, state)
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonNoContainerRuntime, err.Error())
		return stepErr(StepInfo, winnodev1.ReasonNoContainerRuntime, err)
	}
	return nil
}

// runtimeInput is what the plan needs about the container runtime and its
// surroundings.
type runtimeInput struct {
	runtime   plan.RuntimeFacts
	proxy     plan.ProxyFacts
	trustedCA []byte
}

// runtimeFacts reads the instance's runtime facts from the platform's
// objects. Registries are only for a containerd winnode manages.
func (c *Configurer) runtimeFacts(ctx context.Context, inst *winnodev1.WindowsInstance) (runtimeInput, error) {
	in := runtimeInput{runtime: plan.RuntimeFacts{Mode: c.runtimeMode(inst)}, proxy: c.Proxy}
	p, _, err := c.platform()
	if err != nil {
		return in, err
	}
	var regs []plan.RegistryHosts
	if p == platform.OpenShift {
		regs, err = c.openShiftRuntime(ctx, inst, &in)
	} else {
		regs, err = c.kubernetesRuntime(ctx, inst, &in)
	}
	if err != nil {
		return in, err
	}
	if in.runtime.Mode == plan.RuntimeManaged {
		in.runtime.Registries = regs
	}
	if len(in.trustedCA) > 0 {
		if _, err := certutil.ParseCertsPEM(in.trustedCA); err != nil {
			return in, fmt.Errorf("the proxy's CA bundle: %w", err)
		}
	}
	return in, nil
}

// openShiftRuntime reads OpenShift's mirror sets, pull secret, proxy and
// trusted CA.
func (c *Configurer) openShiftRuntime(ctx context.Context, inst *winnodev1.WindowsInstance, in *runtimeInput) ([]plan.RegistryHosts, error) {
	if c.OpenShift == nil {
		return nil, fmt.Errorf("platform openshift, but no client for OpenShift's configuration objects is configured")
	}
	rt, err := openshift.LoadRuntime(ctx, c.OpenShift)
	if err != nil {
		return nil, err
	}
	in.proxy = plan.ProxyFacts{HTTPProxy: rt.Proxy.HTTPProxy, HTTPSProxy: rt.Proxy.HTTPSProxy, NoProxy: rt.Proxy.NoProxy}
	in.trustedCA = rt.TrustedCA
	var creds registries.Credentials
	if len(rt.PullSecret) > 0 {
		if creds, err = registries.ParseCredentials(rt.PullSecret); err != nil {
			c.event(inst, corev1.EventTypeWarning, EventReasonRegistriesInvalid, "the global pull secret %s/%s: %v; the mirrors get no credentials",
				openshift.ConfigNamespace, openshift.PullSecretName, err)
		}
	}
	regs, warnings := registries.FromMirrorSets(rt.IDMS, rt.ITMS, creds)
	for _, w := range warnings {
		c.event(inst, corev1.EventTypeWarning, EventReasonRegistriesInvalid, "%s", w)
	}
	return regs, nil
}

// kubernetesRuntime reads the windows-registries ConfigMap, its
// credentials and the trusted CA ConfigMap.
func (c *Configurer) kubernetesRuntime(ctx context.Context, inst *winnodev1.WindowsInstance, in *runtimeInput) ([]plan.RegistryHosts, error) {
	if c.ConfigNamespace == "" {
		return nil, nil
	}
	if name := c.TrustedCAConfigMap; name != "" {
		cm, err := c.configKube().CoreV1().ConfigMaps(c.ConfigNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading the proxy's CA bundle, ConfigMap %s/%s (--trusted-ca-configmap): %w", c.ConfigNamespace, name, err)
		}
		in.trustedCA = []byte(cm.Data[openshift.TrustedCAKey])
	}
	cm, err := c.configKube().CoreV1().ConfigMaps(c.ConfigNamespace).Get(ctx, registries.ConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", c.ConfigNamespace, registries.ConfigMapName, err)
	}
	creds := c.registryCredentials(ctx, inst, cm)
	regs, errs := registries.FromConfigMap(cm.Data, creds)
	for _, e := range errs {
		c.event(inst, corev1.EventTypeWarning, EventReasonRegistriesInvalid, "ConfigMap %s/%s: %v; that registry is left out", c.ConfigNamespace, registries.ConfigMapName, e)
	}
	return regs, nil
}

// configKube is the client of the operator's own configuration.
func (c *Configurer) configKube() kubernetes.Interface {
	if c.ConfigKube != nil {
		return c.ConfigKube
	}
	return c.Kube
}

// registryCredentials reads the Secret the ConfigMap names; a Secret that
// is missing or does not read is reported, and the registries go without.
func (c *Configurer) registryCredentials(ctx context.Context, inst *winnodev1.WindowsInstance, cm *corev1.ConfigMap) registries.Credentials {
	name := cm.Annotations[registries.AnnotationCredentials]
	if name == "" {
		return nil
	}
	secret, err := c.configKube().CoreV1().Secrets(c.ConfigNamespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil && secret.Type != corev1.SecretTypeDockerConfigJson {
		err = fmt.Errorf("its type is %q, not %s", secret.Type, corev1.SecretTypeDockerConfigJson)
	}
	var creds registries.Credentials
	if err == nil {
		creds, err = registries.ParseCredentials(secret.Data[corev1.DockerConfigJsonKey])
	}
	if err != nil {
		c.event(inst, corev1.EventTypeWarning, EventReasonRegistriesInvalid, "the registries' credentials, Secret %s/%s (annotation %s of ConfigMap %s): %v; the registries get none",
			c.ConfigNamespace, name, registries.AnnotationCredentials, registries.ConfigMapName, err)
		return nil
	}
	return creds
}

// ProxyFromEnvironment is the cluster-wide proxy on Kubernetes: the
// operator's own HTTP_PROXY, HTTPS_PROXY and NO_PROXY (upper or lower case,
// as Go reads them), which OLM sets on an operator from the cluster's
// proxy.
func ProxyFromEnvironment(getenv func(string) string) plan.ProxyFacts {
	get := func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return getenv(strings.ToLower(name))
	}
	return plan.ProxyFacts{HTTPProxy: get("HTTP_PROXY"), HTTPSProxy: get("HTTPS_PROXY"), NoProxy: get("NO_PROXY")}
}
