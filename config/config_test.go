package config

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/controller/exporter"
	"github.com/winnode/winnode/internal/controller/runtimeclass"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	namespace      = "winnode-system"
	serviceAccount = "winnode-operator"
	fieldOwner     = client.FieldOwner("winnode-config-test")
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// build runs `kustomize build config/<dir>` and decodes every object.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := testenv.KustomizeBuild(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("kustomize build config/%s: output does not decode: %v", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	if len(objs) == 0 {
		t.Fatalf("kustomize build config/%s produced nothing", dir)
	}
	return objs
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s in the kustomize output", kind, ns, name)
	return nil
}

// into converts an unstructured object to a typed one.
func into[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &out, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return &out
}

// namespaceOf says where each kind of object must land: the RBAC deliberately
// spans kube-system, kube-public and default, everything else is in the
// operator's namespace, and cluster-scoped objects have none.
var allowedNamespaces = map[string]bool{namespace: true, "kube-system": true, "kube-public": true, "default": true}

func TestDefaultManifests(t *testing.T) {
	objs := build(t, "default")
	clusterScoped := map[string]bool{"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
		"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	for _, o := range objs {
		id := o.GetKind() + " " + o.GetName()
		switch {
		case clusterScoped[o.GetKind()] && o.GetNamespace() != "":
			t.Errorf("%s: cluster-scoped but has namespace %q", id, o.GetNamespace())
		case !clusterScoped[o.GetKind()] && !allowedNamespaces[o.GetNamespace()]:
			t.Errorf("%s: namespace %q", id, o.GetNamespace())
		case !clusterScoped[o.GetKind()] && o.GetNamespace() != namespace && o.GetKind() != "Role" && o.GetKind() != "RoleBinding":
			t.Errorf("%s: only RBAC may live outside %s, found it in %q", id, namespace, o.GetNamespace())
		}
	}

	ns := find(t, objs, "Namespace", "", namespace)
	if ns.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace %s does not enforce the restricted Pod Security Standard: %v", namespace, ns.GetLabels())
	}
	crd := into[apiextensionsv1.CustomResourceDefinition](t, find(t, objs, "CustomResourceDefinition", "", "windowsinstances.winnode.io"))
	if crd.Spec.Scope != apiextensionsv1.ClusterScoped {
		t.Errorf("WindowsInstance CRD scope = %s, want Cluster", crd.Spec.Scope)
	}
	// Cluster API finds the API version of a bootstrap provider's kinds by
	// the contract label on their CRDs, named as contract.CalculateCRDName does.
	for _, name := range []string{"winnodeconfigs.bootstrap.winnode.io", "winnodeconfigtemplates.bootstrap.winnode.io"} {
		crd := into[apiextensionsv1.CustomResourceDefinition](t, find(t, objs, "CustomResourceDefinition", "", name))
		if crd.Spec.Scope != apiextensionsv1.NamespaceScoped || crd.Labels["cluster.x-k8s.io/v1beta2"] != "v1alpha1" {
			t.Errorf("CRD %s: scope %s, labels %v; Cluster API's contract wants Namespaced and cluster.x-k8s.io/v1beta2=v1alpha1", name, crd.Spec.Scope, crd.Labels)
		}
	}
	aggregate := into[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", "", "winnode-capi-bootstrap-provider"))
	if aggregate.Labels["cluster.x-k8s.io/aggregate-to-manager"] != "true" {
		t.Errorf("ClusterRole winnode-capi-bootstrap-provider lacks Cluster API's aggregation label: %v", aggregate.Labels)
	}

	dep := into[appsv1.Deployment](t, find(t, objs, "Deployment", namespace, "winnode-operator"))
	pod := dep.Spec.Template.Spec
	if pod.ServiceAccountName != serviceAccount {
		t.Errorf("Deployment runs as ServiceAccount %q, want %q", pod.ServiceAccountName, serviceAccount)
	}
	if pod.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("Deployment may be scheduled onto a Windows node: nodeSelector %v", pod.NodeSelector)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context is not restricted: %+v", sc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || sc.Privileged != nil && *sc.Privileged {
		t.Errorf("container security context is not restricted: %+v", sc)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["metrics"] != 8080 || ports["health"] != 8081 {
		t.Errorf("container ports = %v, want metrics 8080 and health 8081", ports)
	}
	for name, probe := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("probe for %s: %+v", name, probe)
		}
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--namespace=$(POD_NAMESPACE)", "--payload-dir=/payload", "--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"} {
		if !strings.Contains(args, want) {
			t.Errorf("operator args %q lack %s", args, want)
		}
	}

	svc := into[corev1.Service](t, find(t, objs, "Service", namespace, "winnode-operator-metrics"))
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("metrics Service selector %v does not select the operator's pods (labels %v)", svc.Spec.Selector, dep.Spec.Template.Labels)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("metrics Service ports = %+v", svc.Spec.Ports)
	}

	// Nothing grants wildcards, and every binding is to the operator's own
	// account, but the two that give join credentials
	// system:node-bootstrapper (internal/bootstrap): the bootstrap tokens'
	// group, and the join ServiceAccounts, none when installed.
	joinBindings := map[string][]rbacv1.Subject{
		"winnode:bootstrappers:node-bootstrapper": {{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:bootstrappers:winnode"}},
		"winnode-join-service-accounts":           nil,
	}
	for _, o := range objs {
		if want, ok := joinBindings[o.GetName()]; ok && o.GetKind() == "ClusterRoleBinding" {
			b := into[rbacv1.ClusterRoleBinding](t, o)
			if !equality.Semantic.DeepEqual(b.Subjects, want) || b.RoleRef.Name != "system:node-bootstrapper" {
				t.Errorf("ClusterRoleBinding %s binds %+v to %s, want %+v to system:node-bootstrapper", o.GetName(), b.Subjects, b.RoleRef.Name, want)
			}
			continue
		}
		switch o.GetKind() {
		case "ClusterRole", "Role":
			role := into[rbacv1.ClusterRole](t, o)
			for _, r := range role.Rules {
				for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
					for _, s := range list {
						if s == "*" {
							t.Errorf("%s %s grants a wildcard: %+v", o.GetKind(), o.GetName(), r)
						}
					}
				}
			}
		case "ClusterRoleBinding", "RoleBinding":
			b := into[rbacv1.RoleBinding](t, o)
			if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != serviceAccount || b.Subjects[0].Namespace != namespace {
				t.Errorf("%s %s binds %+v, want only ServiceAccount %s/%s", o.GetKind(), o.GetName(), b.Subjects, namespace, serviceAccount)
			}
		}
	}
}

func TestOpenShiftOverlay(t *testing.T) {
	objs := build(t, "openshift")
	base := build(t, "default")
	if len(objs) != len(base)+12 {
		t.Errorf("the overlay has %d objects, want the base's %d plus SCC, its Role and RoleBinding, ServiceMonitor, Prometheus' Role and RoleBinding, the Machine API source's Role and RoleBinding, and its admission policy and binding, and the container runtime settings' Role and RoleBinding", len(objs), len(base))
	}
	find(t, objs, "ValidatingAdmissionPolicy", "", "winnode-operator-machines")
	find(t, objs, "ValidatingAdmissionPolicyBinding", "", "winnode-operator-machines")
	find(t, objs, "Role", "openshift-machine-api", "winnode-operator")
	find(t, objs, "RoleBinding", "openshift-machine-api", "winnode-operator")
	find(t, objs, "Role", "openshift-config", "winnode-operator")
	find(t, objs, "RoleBinding", "openshift-config", "winnode-operator")
	ns := find(t, objs, "Namespace", "", namespace)
	if ns.GetLabels()["openshift.io/cluster-monitoring"] != "true" {
		t.Errorf("namespace not labelled for cluster monitoring: %v", ns.GetLabels())
	}
	scc := find(t, objs, "SecurityContextConstraints", "", "winnode-operator")
	for field, want := range map[string]any{"allowPrivilegeEscalation": false, "allowPrivilegedContainer": false, "readOnlyRootFilesystem": true, "allowHostNetwork": false} {
		if got := scc.Object[field]; got != want {
			t.Errorf("SCC %s = %v, want %v", field, got, want)
		}
	}
	if ru, _, _ := unstructured.NestedString(scc.Object, "runAsUser", "type"); ru != "MustRunAsRange" {
		t.Errorf("SCC runAsUser.type = %q, want MustRunAsRange", ru)
	}
	sm := find(t, objs, "ServiceMonitor", namespace, "winnode-operator")
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	svc := find(t, objs, "Service", namespace, "winnode-operator-metrics")
	for k, v := range sel {
		if svc.GetLabels()[k] != v {
			t.Errorf("ServiceMonitor selector %v does not match the metrics Service's labels %v", sel, svc.GetLabels())
		}
	}
}

// The ServiceMonitor of windows_exporter verifies what the operator
// serves: on Kubernetes the CA it publishes (ConfigMap windows-exporter-ca,
// ca.crt) and each node's own address; on OpenShift (the overlay) the
// service CA bundle injected into that ConfigMap and the Service's name,
// which the service CA's certificate carries.
func TestWindowsExporterServiceMonitors(t *testing.T) {
	for dir, want := range map[string]map[string]any{
		"prometheus":           {"key": metricstls.CAKey, "serverName": nil},
		"prometheus-openshift": {"key": metricstls.ServiceCAKey, "serverName": metricstls.ServiceServerName(exporter.ServiceName, namespace)},
	} {
		sm := find(t, build(t, dir), "ServiceMonitor", namespace, exporter.ServiceName)
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(eps) != 1 {
			t.Fatalf("config/%s: ServiceMonitor %s has %d endpoints, want 1", dir, exporter.ServiceName, len(eps))
		}
		tlsConfig, _, _ := unstructured.NestedMap(eps[0].(map[string]any), "tlsConfig")
		cm, _, _ := unstructured.NestedString(tlsConfig, "ca", "configMap", "name")
		key, _, _ := unstructured.NestedString(tlsConfig, "ca", "configMap", "key")
		if cm != metricstls.CAConfigMapName || key != want["key"] || tlsConfig["serverName"] != want["serverName"] {
			t.Errorf("config/%s: ServiceMonitor %s's tlsConfig %v, want ConfigMap %s key %v and serverName %v", dir, exporter.ServiceName, tlsConfig, metricstls.CAConfigMapName, want["key"], want["serverName"])
		}
	}
}

// A comment above every RBAC rule says why the operator needs it. The rules
// generated by controller-gen (rbac/role.yaml) are not part of the install.
func TestEveryRBACRuleSaysWhy(t *testing.T) {
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "config/rbac/*.yaml"))
	for _, dir := range []string{"config/openshift", "config/workload"} {
		more, _ := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		files = append(files, more...)
	}
	ruleStart := regexp.MustCompile(`^\s*- apiGroups:`)
	rules := 0
	for _, file := range files {
		if filepath.Base(file) == "role.yaml" || filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		prev, n := "", 0
		for sc.Scan() {
			n++
			line := sc.Text()
			if ruleStart.MatchString(line) {
				rules++
				if !strings.HasPrefix(strings.TrimSpace(prev), "#") {
					t.Errorf("%s:%d: RBAC rule without a comment above it saying why it is needed", filepath.Base(file), n)
				}
			}
			if strings.TrimSpace(line) != "" {
				prev = line
			}
		}
		f.Close()
	}
	if rules < 10 {
		t.Fatalf("found only %d RBAC rules in config/rbac and config/openshift; the scan is broken", rules)
	}
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return client.WithFieldValidation(c, metav1.FieldValidationStrict)
}

// dryRunAll applies every object with server-side apply and dryRun=All: the
// API server validates, defaults and admits each one (schemas, RBAC
// escalation checks, Pod Security) without storing anything.
func dryRunAll(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range objs {
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership, client.DryRunAll)
		if err != nil {
			t.Errorf("server-side dry run of %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// applyNamespace really creates the operator's namespace: a dry run of a
// namespaced object fails when its namespace does not exist.
func applyNamespace(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := find(t, objs, "Namespace", "", namespace)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(ns.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
}

func TestDefaultServerSideDryRun(t *testing.T) {
	env := testenv.Get(t)
	c := newClient(t, env.Config)
	objs := build(t, "default")
	applyNamespace(t, c, objs)
	dryRunAll(t, c, objs)

	// Admitting a pod needs its ServiceAccount to exist, really.
	sa := find(t, objs, "ServiceAccount", namespace, serviceAccount)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(sa.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
		t.Fatalf("creating ServiceAccount %s: %v", serviceAccount, err)
	}

	// The namespace enforces the restricted Pod Security Standard: a Pod made
	// from the Deployment's template must be admitted there.
	dep := find(t, objs, "Deployment", namespace, "winnode-operator")
	tmpl, _, _ := unstructured.NestedMap(dep.Object, "spec", "template")
	pod := &unstructured.Unstructured{Object: tmpl}
	pod.SetAPIVersion("v1")
	pod.SetKind("Pod")
	pod.SetName("winnode-operator-admission-check")
	pod.SetNamespace(namespace)
	if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Fatalf("the operator's pod is not admitted under Pod Security %q: %v", "restricted", err)
	}

	// The admission check is real: a pod that asks for privilege escalation is refused.
	bad := pod.DeepCopy()
	containers, _, _ := unstructured.NestedSlice(bad.Object, "spec", "containers")
	_ = unstructured.SetNestedField(containers[0].(map[string]any), true, "securityContext", "allowPrivilegeEscalation")
	_ = unstructured.SetNestedSlice(bad.Object, containers, "spec", "containers")
	if err := c.Create(ctx, bad, client.DryRunAll); err == nil {
		t.Fatal("a pod with allowPrivilegeEscalation=true was admitted: the namespace does not enforce Pod Security")
	}
}

// The test control plane has no OpenShift APIs. SecurityContextConstraints and
// ServiceMonitor are dry-run against minimal stand-in CRDs installed here:
// structural schemas of just the fields the overlay uses (types and enums as
// in the real APIs, unknown fields refused under strict field validation),
// so a typo or a wrong type is caught, while fields the overlay does not use
// are not modelled. TestOpenShiftOverlay checks the values offline.
func TestOpenShiftServerSideDryRun(t *testing.T) {
	env := testenv.Get(t)
	c := newClient(t, env.Config)
	installStandInCRD(t, c, "security.openshift.io", "SecurityContextConstraints", "securitycontextconstraints", apiextensionsv1.ClusterScoped, sccSchema())
	installStandInCRD(t, c, "monitoring.coreos.com", "ServiceMonitor", "servicemonitors", apiextensionsv1.NamespaceScoped, serviceMonitorSchema())
	objs := build(t, "openshift")
	applyNamespace(t, c, objs)
	// Every OpenShift cluster has the Machine API's namespace and its own
	// configuration's.
	for _, name := range []string{"openshift-machine-api", "openshift-config"} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	dryRunAll(t, c, objs)

	// The stand-ins do refuse what the real APIs refuse.
	scc := find(t, objs, "SecurityContextConstraints", "", "winnode-operator").DeepCopy()
	scc.Object["allowPrivilegeEscalations"] = false
	sm := find(t, objs, "ServiceMonitor", namespace, "winnode-operator").DeepCopy()
	_ = unstructured.SetNestedSlice(sm.Object, []any{map[string]any{"port": "metrics", "scheme": "ftp"}}, "spec", "endpoints")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, bad := range []*unstructured.Unstructured{scc, sm} {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(bad), fieldOwner, client.ForceOwnership, client.DryRunAll); err == nil {
			t.Errorf("the stand-in CRD for %s accepted an unknown field or a bad value: %v", bad.GetKind(), bad.Object)
		}
	}
}

func str() apiextensionsv1.JSONSchemaProps { return apiextensionsv1.JSONSchemaProps{Type: "string"} }
func boolean() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "boolean"}
}
func enum(values ...string) apiextensionsv1.JSONSchemaProps {
	p := str()
	for _, v := range values {
		p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + v + `"`)})
	}
	return p
}
func stringList() apiextensionsv1.JSONSchemaProps {
	item := str()
	return apiextensionsv1.JSONSchemaProps{Type: "array", Nullable: true, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}}
}
func object(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
}

// sccSchema: security.openshift.io/v1 SecurityContextConstraints, the fields config/openshift/scc.yaml uses.
func sccSchema() apiextensionsv1.JSONSchemaProps {
	ranges := apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"min": {Type: "integer"}, "max": {Type: "integer"}}}}}
	props := map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": str(), "kind": str(), "metadata": {Type: "object"},
		"priority":           {Type: "integer", Format: "int32", Nullable: true},
		"fsGroup":            object(map[string]apiextensionsv1.JSONSchemaProps{"type": enum("MustRunAs", "RunAsAny"), "ranges": ranges}),
		"supplementalGroups": object(map[string]apiextensionsv1.JSONSchemaProps{"type": enum("MustRunAs", "RunAsAny"), "ranges": ranges}),
		"runAsUser": object(map[string]apiextensionsv1.JSONSchemaProps{
			"type": enum("MustRunAs", "MustRunAsRange", "MustRunAsNonRoot", "RunAsAny"),
			"uid":  {Type: "integer", Format: "int64"}, "uidRangeMin": {Type: "integer", Format: "int64"}, "uidRangeMax": {Type: "integer", Format: "int64"},
		}),
		"seLinuxContext": object(map[string]apiextensionsv1.JSONSchemaProps{"type": enum("MustRunAs", "RunAsAny"), "seLinuxOptions": {Type: "object", XPreserveUnknownFields: ptr(true)}}),
	}
	for _, b := range []string{"allowHostDirVolumePlugin", "allowHostIPC", "allowHostNetwork", "allowHostPID", "allowHostPorts",
		"allowPrivilegeEscalation", "allowPrivilegedContainer", "readOnlyRootFilesystem", "defaultAllowPrivilegeEscalation"} {
		props[b] = boolean()
	}
	for _, l := range []string{"allowedCapabilities", "defaultAddCapabilities", "requiredDropCapabilities", "seccompProfiles",
		"volumes", "users", "groups", "allowedUnsafeSysctls", "forbiddenSysctls"} {
		props[l] = stringList()
	}
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
}

// serviceMonitorSchema: monitoring.coreos.com/v1 ServiceMonitor, the fields config/openshift/servicemonitor.yaml uses.
func serviceMonitorSchema() apiextensionsv1.JSONSchemaProps {
	labels := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}
	interval := str()
	interval.Pattern = `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	endpoint := object(map[string]apiextensionsv1.JSONSchemaProps{
		"port": str(), "path": str(), "scheme": enum("http", "https", "HTTP", "HTTPS"), "interval": interval,
	})
	return object(map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": str(), "kind": str(), "metadata": {Type: "object"},
		"spec": object(map[string]apiextensionsv1.JSONSchemaProps{
			"selector":  object(map[string]apiextensionsv1.JSONSchemaProps{"matchLabels": labels}),
			"endpoints": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &endpoint}},
		}),
	})
}

func ptr[T any](v T) *T { return &v }

func installStandInCRD(t *testing.T, c client.Client, group, kind, plural string, scope apiextensionsv1.ResourceScope, schema apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural, ListKind: kind + "List"},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema},
			}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Create(ctx, crd); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("installing stand-in CRD %s: %v", crd.Name, err)
	}
	testkit.Eventually(t, time.Minute, "stand-in CRD "+crd.Name+" established", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, err.Error()
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", crd.Status.Conditions)
	})
}

// access is one permission, checked with a SubjectAccessReview as the operator's ServiceAccount.
type access struct {
	namespace, group, resource, subresource, verb, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	if a.name != "" {
		r += " " + a.name
	}
	if a.namespace != "" {
		r += " in " + a.namespace
	}
	return a.verb + " " + r
}

func allowed(t *testing.T, c client.Client, a access) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + namespace + ":" + serviceAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: a.namespace, Group: a.group, Resource: a.resource, Subresource: a.subresource, Verb: a.verb, Name: a.name,
		},
	}}
	if err := c.Create(ctx, sar); err != nil {
		t.Fatalf("SubjectAccessReview for %s: %v", a, err)
	}
	return sar.Status.Allowed
}

// kubeconfigsNamespace is where the tests bind the ClusterRole
// winnode-workload-kubeconfigs, as docs/install.md tells an administrator
// to in each namespace whose Clusters have Windows Machines.
const kubeconfigsNamespace = "capi-clusters"

// applyRBAC really applies the ServiceAccount and RBAC of config/default,
// and binds the kubeconfig Secrets' ClusterRole in kubeconfigsNamespace.
func applyRBAC(t *testing.T, c client.Client) {
	t.Helper()
	objs := build(t, "default")
	applyNamespace(t, c, objs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
				t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	bindKubeconfigs(ctx, t, c)
	waitRBAC(t, c, objs)
}

// bindKubeconfigs binds the ClusterRole winnode-workload-kubeconfigs to the
// operator in kubeconfigsNamespace, as docs/install.md says.
func bindKubeconfigs(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubeconfigsNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: kubeconfigsNamespace, Name: "winnode-workload-kubeconfigs"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "winnode-workload-kubeconfigs"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "winnode-operator", Namespace: namespace}},
	}
	if err := c.Create(ctx, rb); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

// waitRBAC waits until the API server's RBAC authorizer, which works from its
// own informers, grants the first rule of every applied Role and ClusterRole
// (all of them are bound to the operator's ServiceAccount). Without this, the
// first access reviews after an apply can race the authorizer's cache.
func waitRBAC(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		// Cluster API's manager role aggregates this one; the operator
		// holds none of it.
		if o.GetLabels()["cluster.x-k8s.io/aggregate-to-manager"] == "true" {
			continue
		}
		var role rbacv1.ClusterRole // a Role has the same rules
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if len(role.Rules) == 0 || len(role.Rules[0].Resources) == 0 {
			continue
		}
		r := role.Rules[0]
		resource, sub, _ := strings.Cut(r.Resources[0], "/")
		a := access{verb: r.Verbs[0], group: r.APIGroups[0], resource: resource, subresource: sub, namespace: o.GetNamespace()}
		if o.GetName() == "winnode-workload-kubeconfigs" {
			a.namespace = kubeconfigsNamespace // bound there only
		}
		if len(r.ResourceNames) > 0 {
			a.name = r.ResourceNames[0]
		}
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("the authorizer granting the first rule (%s) of %s %s", a, o.GetKind(), o.GetName()), func() (bool, string) {
			return allowed(t, c, a), "not granted"
		})
	}
}

// TestRBACGrantsWhatTheOperatorNeedsAndNoMore applies the RBAC for real and
// asks the API server's authorizer what the operator's ServiceAccount may do.
func TestRBACGrantsWhatTheOperatorNeedsAndNoMore(t *testing.T) {
	env := testenv.Get(t)
	c := newClient(t, env.Config)
	applyRBAC(t, c)

	need := []access{
		{verb: "watch", group: "winnode.io", resource: "windowsinstances"},
		{verb: "create", group: "winnode.io", resource: "windowsinstances"},
		{verb: "delete", group: "winnode.io", resource: "windowsinstances"},
		{verb: "update", group: "winnode.io", resource: "windowsinstances", subresource: "status"},
		{verb: "update", group: "winnode.io", resource: "windowsinstances", subresource: "finalizers"},
		{verb: "watch", resource: "configmaps", namespace: namespace},
		{verb: "get", resource: "secrets", namespace: namespace, name: "cloud-private-key"},
		{verb: "create", resource: "secrets", namespace: namespace},
		{verb: "update", resource: "secrets", namespace: namespace, name: "windows-user-data"},
		{verb: "update", resource: "secrets", subresource: "finalizers", namespace: namespace, name: "cloud-private-key"},
		{verb: "create", resource: "events", namespace: namespace},
		{verb: "create", resource: "events", namespace: "default"},
		{verb: "patch", group: "events.k8s.io", resource: "events", namespace: "default"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: namespace},
		{verb: "patch", resource: "nodes"},
		{verb: "delete", resource: "nodes"},
		{verb: "list", resource: "pods"},
		{verb: "create", resource: "pods", subresource: "eviction", namespace: "default"},
		{verb: "get", group: "apps", resource: "daemonsets", namespace: "kube-system"},
		{verb: "watch", group: "certificates.k8s.io", resource: "certificatesigningrequests"},
		{verb: "update", group: "certificates.k8s.io", resource: "certificatesigningrequests", subresource: "approval"},
		{verb: "approve", group: "certificates.k8s.io", resource: "signers", name: "kubernetes.io/kube-apiserver-client-kubelet"},
		{verb: "approve", group: "certificates.k8s.io", resource: "signers", name: "kubernetes.io/kubelet-serving"},
		{verb: "create", resource: "secrets", namespace: "kube-system"},
		{verb: "delete", resource: "secrets", namespace: "kube-system", name: "bootstrap-token-abcdef"},
		{verb: "get", resource: "configmaps", namespace: "kube-public", name: "cluster-info"},
		{verb: "get", resource: "configmaps", namespace: "kube-system", name: "kubelet-config"},
		{verb: "get", resource: "services", namespace: "kube-system", name: "kube-dns"},
		{verb: "get", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", name: "winnode:bootstrappers:node-bootstrapper"},
		{verb: "update", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", name: "winnode:bootstrappers:node-bootstrapper"},
		{verb: "get", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", name: "winnode-join-service-accounts"},
		{verb: "update", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", name: "winnode-join-service-accounts"},
		{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "system:node-bootstrapper"},
		// Join ServiceAccounts (docs/credentials.md).
		{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"},
		{verb: "create", resource: "serviceaccounts", namespace: namespace},
		{verb: "delete", resource: "serviceaccounts", namespace: namespace, name: "winnode-join-a"},
		{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: namespace, name: "winnode-join-a"},
		// The Cluster API bootstrap provider (docs/cluster-api.md).
		{verb: "watch", group: "bootstrap.winnode.io", resource: "winnodeconfigs"},
		{verb: "patch", group: "bootstrap.winnode.io", resource: "winnodeconfigs", subresource: "status", namespace: "capi-clusters"},
		{verb: "update", group: "bootstrap.winnode.io", resource: "winnodeconfigs", subresource: "finalizers", namespace: "capi-clusters"},
		{verb: "get", group: "cluster.x-k8s.io", resource: "machines", namespace: "capi-clusters"},
		{verb: "watch", group: "cluster.x-k8s.io", resource: "machines"},
		{verb: "patch", group: "cluster.x-k8s.io", resource: "machines", namespace: "capi-clusters"},
		{verb: "watch", group: "cluster.x-k8s.io", resource: "clusters"},
		{verb: "create", resource: "secrets", namespace: "capi-clusters"},
		{verb: "create", group: "events.k8s.io", resource: "events", namespace: "capi-clusters"},
		// A Cluster's kubeconfig, to act in its workload cluster
		// (workload_kubeconfigs.yaml).
		{verb: "get", resource: "secrets", namespace: kubeconfigsNamespace, name: "windows-cluster-kubeconfig"},
	}
	for _, a := range need {
		if !allowed(t, c, a) {
			t.Errorf("the operator needs %s, and is not allowed to", a)
		}
	}

	mustNot := []access{
		// Secrets are read by name (a Cluster's kubeconfig), never listed
		// or watched outside the operator's namespace.
		{verb: "list", resource: "secrets"},
		{verb: "watch", resource: "secrets", namespace: "capi-clusters"},
		{verb: "update", resource: "secrets", namespace: namespace, name: "cloud-private-key"},
		{verb: "delete", resource: "secrets", namespace: namespace, name: "cloud-private-key"},
		{verb: "update", resource: "secrets", namespace: "kube-system", name: "bootstrap-token-abcdef"},
		// Tokens are found by the ID each instance's status records, and
		// deleted by the name it gives: kube-system's Secrets are never read.
		{verb: "list", resource: "secrets", namespace: "kube-system"},
		{verb: "get", resource: "secrets", namespace: "kube-system", name: "bootstrap-token-abcdef"},
		{verb: "get", resource: "secrets", namespace: "kube-system", name: "attachdetach-controller-token"},
		// Nodes are patched, never rewritten whole.
		{verb: "update", resource: "nodes"},
		{verb: "create", resource: "serviceaccounts", namespace: "kube-system"},
		{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: "kube-system", name: "default"},
		{verb: "update", resource: "configmaps", namespace: namespace, name: "windows-instances"},
		{verb: "get", resource: "configmaps", namespace: "kube-public", name: "other"},
		{verb: "get", resource: "configmaps", namespace: "kube-system", name: "kube-proxy"},
		{verb: "list", resource: "services", namespace: "kube-system"},
		{verb: "create", resource: "nodes"},
		{verb: "delete", resource: "pods", namespace: "default"},
		{verb: "create", resource: "pods", namespace: namespace},
		{verb: "approve", group: "certificates.k8s.io", resource: "signers", name: "kubernetes.io/kube-apiserver-client"},
		{verb: "delete", group: "certificates.k8s.io", resource: "certificatesigningrequests"},
		{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin"},
		// Bound, this role would let kube-controller-manager auto-approve the
		// bootstrap group's CSRs for any node name (see internal/bootstrap/rbac.go).
		{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
		{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "system:node-bootstrapper"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		// Whoever may create, or rewrite, any ClusterRoleBinding may bind
		// itself to cluster-admin: only the two shipped ones are updated.
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
		{verb: "delete", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", name: "winnode-operator"},
		{verb: "delete", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", name: "winnode-join-service-accounts"},
		{verb: "update", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", name: "winnode-operator"},
		{verb: "patch", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", name: "cluster-admin"},
		{verb: "get", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", name: "winnode:join:a"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: "kube-system"},
		{verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
		// Bootstrap-data Secrets are created only: never changed or deleted.
		{verb: "update", resource: "secrets", namespace: "capi-clusters"},
		{verb: "patch", resource: "secrets", namespace: "capi-clusters"},
		{verb: "delete", resource: "secrets", namespace: "capi-clusters"},
		{verb: "patch", resource: "secrets", namespace: namespace, name: "cloud-private-key"},
		// Machines and templates are Cluster API's (winnode patches only its
		// hook annotation), WinnodeConfigs are created by it.
		{verb: "update", group: "cluster.x-k8s.io", resource: "machines", namespace: "capi-clusters"},
		{verb: "delete", group: "cluster.x-k8s.io", resource: "machines", namespace: "capi-clusters"},
		{verb: "create", group: "bootstrap.winnode.io", resource: "winnodeconfigs", namespace: "capi-clusters"},
		{verb: "update", group: "bootstrap.winnode.io", resource: "winnodeconfigs", namespace: "capi-clusters"},
		{verb: "get", group: "bootstrap.winnode.io", resource: "winnodeconfigtemplates", namespace: "capi-clusters"},
	}
	for _, a := range mustNot {
		if allowed(t, c, a) {
			t.Errorf("the operator may %s, which it does not need", a)
		}
	}
}

// TestOperatorCanBindOnlyThroughTheShippedBindings does, as the operator's
// ServiceAccount, what the operator does to bind join credentials: add a
// subject to the shipped binding winnode-join-service-accounts (RBAC's
// escalation check passes only through the "bind" rule). Creating a binding
// of its own, be it to system:node-bootstrapper, the nodeclient role
// (auto-approval of node CSRs) or cluster-admin, is refused, and so is
// deleting one.
func TestOperatorCanBindOnlyThroughTheShippedBindings(t *testing.T) {
	env := testenv.Get(t)
	admin := newClient(t, env.Config)
	applyRBAC(t, admin)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + serviceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	op := newClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var join rbacv1.ClusterRoleBinding
	if err := op.Get(ctx, client.ObjectKey{Name: "winnode-join-service-accounts"}, &join); err != nil {
		t.Fatalf("the operator cannot read the shipped join binding: %v", err)
	}
	join.Subjects = append(join.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Namespace: namespace, Name: "winnode-join-config-test"})
	if err := op.Update(ctx, &join, client.DryRunAll); err != nil {
		t.Errorf("the operator cannot add a join ServiceAccount to winnode-join-service-accounts: %v", err)
	}

	binding := func(name, role string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: serviceAccount}},
		}
	}
	for _, role := range []string{"system:node-bootstrapper", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", "cluster-admin"} {
		if err := op.Create(ctx, binding("winnode-config-test", role), client.DryRunAll); !apierrors.IsForbidden(err) {
			t.Errorf("the operator could create a ClusterRoleBinding to %s: %v", role, err)
		}
	}
	if err := op.Delete(ctx, binding("winnode-operator", "winnode-operator"), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("the operator could delete a ClusterRoleBinding: %v", err)
	}
}

// TestGeneratedRBACIsGranted: config/rbac/role.yaml, which controller-gen
// writes from the +kubebuilder:rbac markers beside the code
// (hack/generate.sh), must grant exactly what the hand-written, commented
// config/rbac/*.yaml grants: every permission the code declares is granted,
// and nothing is granted that no marker declares. The tests of
// internal/controller's packages run the operator's controllers under
// role.yaml, so the installed RBAC is the one tested. Permissions are
// compared one (namespace, group, resource, name, verb) at a time, so rules
// may be grouped differently.
func TestGeneratedRBACIsGranted(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "config/rbac")
	generated := rbacPermissions(t, filepath.Join(dir, "role.yaml"))
	granted := map[string]bool{}
	// config/openshift adds the Roles of the Machine API source and of the
	// container runtime's settings, in namespaces only OpenShift has.
	// workload_kubeconfigs.yaml is not there: its ClusterRole is bound by
	// an administrator, per namespace, and no marker asks for it
	// (internal/workload/kubeconfig.go says why).
	for _, f := range []string{"cluster_role.yaml", "roles.yaml", "../openshift/machine_api_rbac.yaml", "../openshift/runtime_rbac.yaml"} {
		for p := range rbacPermissions(t, filepath.Join(dir, f)) {
			granted[p] = true
		}
	}
	for p := range generated {
		if !granted[p] {
			t.Errorf("%s: a +kubebuilder:rbac marker asks for it and config/rbac does not grant it: add a rule with a comment saying why, or narrow the marker", p)
		}
	}
	for p := range granted {
		if !generated[p] {
			t.Errorf("%s: config/rbac grants it and no +kubebuilder:rbac marker asks for it: drop the rule, or add the marker where the code needs it (a package-level comment of a package of internal/controller, or of internal/bootstrap), then run hack/generate.sh", p)
		}
	}
}

// rbacPermissions reads the ClusterRoles and Roles of a YAML file as single
// permissions "namespace group/resource name verb" (namespace and name "*"
// when not limited).
func rbacPermissions(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	perms := map[string]bool{}
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var role struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
			Rules    []rbacv1.PolicyRule
		}
		if err := yaml.Unmarshal(doc, &role); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if role.Kind != "ClusterRole" && role.Kind != "Role" {
			continue
		}
		ns := cmp.Or(role.Metadata.Namespace, "*")
		for _, r := range role.Rules {
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{"*"}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, name := range names {
						for _, verb := range r.Verbs {
							perms[fmt.Sprintf("%s %s/%s %s %s", ns, g, res, name, verb)] = true
						}
					}
				}
			}
		}
	}
	if len(perms) == 0 {
		t.Fatalf("%s grants nothing", path)
	}
	return perms
}

// TestDeploymentArgsAreOperatorFlags builds cmd/winnode-operator and checks
// that every flag the Deployment passes is one the operator defines, so the
// manifests cannot drift from the program.
func TestDeploymentArgsAreOperatorFlags(t *testing.T) {
	dep := into[appsv1.Deployment](t, find(t, build(t, "default"), "Deployment", namespace, "winnode-operator"))
	operator := testenv.Binary(t, "cmd/winnode-operator")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, operator, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("winnode-operator --help: %v\n%s", err, out)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-{1,2}([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		defined[m[1]] = true
	}
	if !defined["namespace"] {
		t.Fatalf("could not read the flags from winnode-operator --help:\n%s", out)
	}
	for _, arg := range dep.Spec.Template.Spec.Containers[0].Args {
		name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !defined[name] {
			t.Errorf("the Deployment passes %s, but winnode-operator has no flag --%s:\n%s", arg, name, out)
		}
	}
}

// The image cannot be built here (no container engine), so the Containerfile
// is checked against the tree and the manifests instead: every COPY source
// exists, the entrypoint is the Deployment's command, the payload lands where
// --payload-dir points, and the user is numeric (runAsNonRoot needs that).
func TestContainerfileMatchesTreeAndManifests(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	copies := 0
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "COPY" || strings.HasPrefix(fields[1], "--from=") {
			continue
		}
		for _, src := range fields[1 : len(fields)-1] {
			copies++
			if _, err := os.Stat(filepath.Join(root, src)); err != nil {
				t.Errorf("Containerfile copies %s, which is not in the tree: %v", src, err)
			}
		}
	}
	if copies < 5 {
		t.Fatalf("found only %d COPY sources in the Containerfile; the scan is broken", copies)
	}

	dep := into[appsv1.Deployment](t, find(t, build(t, "default"), "Deployment", namespace, "winnode-operator"))
	c := dep.Spec.Template.Spec.Containers[0]
	if len(c.Command) != 1 || !strings.Contains(text, `ENTRYPOINT ["`+c.Command[0]+`"]`) {
		t.Errorf("the Deployment runs %v, the Containerfile's ENTRYPOINT is not that", c.Command)
	}
	if !strings.Contains(text, "COPY --from=build /out/winnode-operator "+c.Command[0]) {
		t.Errorf("the Containerfile does not put the operator at %s", c.Command[0])
	}
	for _, arg := range c.Args {
		if dir, ok := strings.CutPrefix(arg, "--payload-dir="); ok && !strings.Contains(text, "COPY --from=build /out/payload "+dir) {
			t.Errorf("the Deployment passes %s, but the Containerfile does not put the payload there", arg)
		}
	}
	if !regexp.MustCompile(`(?m)^USER [0-9]+:[0-9]+$`).MatchString(text) {
		t.Error("the Containerfile's USER is not numeric: runAsNonRoot cannot verify a user name")
	}
	if !strings.Contains(text, "hack/payload/build.sh /out/payload") {
		t.Error("the Containerfile does not build the payload with hack/payload/build.sh")
	}
	// A module that go.mod replaces with a folder of the tree must be there
	// when the image downloads the modules.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	download := strings.Index(text, "go mod download")
	for _, m := range regexp.MustCompile(`(?m)^replace \S+ => (\./\S+)$`).FindAllStringSubmatch(string(gomod), -1) {
		dir := strings.TrimPrefix(m[1], "./") + "/"
		at := strings.Index(text, "COPY "+dir+" ")
		if at < 0 || at > download {
			t.Errorf("go.mod replaces a module with %s, which the Containerfile does not copy before `go mod download`", m[1])
		}
	}
	checkPayloadBuildSources(t, root, text)
}

// checkPayloadBuildSources: every script hack/payload/build.sh sources must
// be in the image's build context, or the image's payload build stops at
// its first line. The Wine helpers are sourced only to record the
// stand-ins' flag lists, which the image leaves out (WINNODE_PAYLOAD_FLAGS=0).
func checkPayloadBuildSources(t *testing.T, root, containerfile string) {
	t.Helper()
	if !strings.Contains(containerfile, "WINNODE_PAYLOAD_FLAGS=0 hack/payload/build.sh") {
		t.Error("the Containerfile builds the payload without WINNODE_PAYLOAD_FLAGS=0, which needs Wine in the image")
	}
	script, err := os.ReadFile(filepath.Join(root, "hack/payload/build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	sourced := regexp.MustCompile(`(?m)^\s*source "\$root/(\S+)"`).FindAllStringSubmatch(string(script), -1)
	if len(sourced) == 0 {
		t.Fatal("found no `source \"$root/...\"` line in hack/payload/build.sh; the scan is broken")
	}
	for _, m := range sourced {
		path := m[1]
		if strings.HasPrefix(path, "hack/wine/") {
			continue
		}
		copied := false
		for _, line := range strings.Split(containerfile, "\n") {
			f := strings.Fields(line)
			if len(f) >= 3 && f[0] == "COPY" && !strings.HasPrefix(f[1], "--") && strings.HasPrefix(path, strings.TrimSuffix(f[1], "/")) {
				copied = true
			}
		}
		if !copied {
			t.Errorf("hack/payload/build.sh sources %s, which the Containerfile does not copy", path)
		}
	}
}

// readObjects decodes every object of a YAML file under config/.
func readObjects(t *testing.T, rel string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "config", rel))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("config/%s: %v", rel, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// The samples are what an administrator copies: the API server accepts them
// (the WindowsInstance against the real CRD's schema), and the operator's
// own parser accepts every entry of the sample ConfigMap.
func TestSamples(t *testing.T) {
	cm := readObjects(t, "samples/windows-instances.yaml")
	wi := readObjects(t, "samples/windowsinstance.yaml")
	if len(cm) != 1 || cm[0].GetKind() != "ConfigMap" || cm[0].GetName() != "windows-instances" || cm[0].GetNamespace() != namespace {
		t.Fatalf("samples/windows-instances.yaml is not the ConfigMap %s/windows-instances", namespace)
	}
	data, _, _ := unstructured.NestedStringMap(cm[0].Object, "data")
	entries, errs := inventory.ParseInstances(data)
	if len(errs) > 0 || len(entries) != len(data) {
		t.Errorf("the operator rejects entries of the sample ConfigMap: %v", errs)
	}

	web := readObjects(t, "samples/windows-web-server.yaml")
	if file, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "samples", "windows-web-server.yaml")); err != nil || !bytes.Equal(file, WindowsWebServer) {
		t.Error("WindowsWebServer is not samples/windows-web-server.yaml")
	}
	checkWebServerSample(t, web)

	env := testenv.Get(t)
	c := newClient(t, env.Config)
	applyNamespace(t, c, build(t, "default"))
	for _, o := range web {
		o.SetNamespace("default")
	}
	dryRunAll(t, c, append(append(cm, wi...), web...))

	// The CRD's validation is real: a username the operator would refuse is refused.
	bad := wi[0].DeepCopy()
	_ = unstructured.SetNestedField(bad.Object, `DOMAIN\admin`, "spec", "username")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(bad), fieldOwner, client.ForceOwnership, client.DryRunAll); err == nil {
		t.Error(`a WindowsInstance with username DOMAIN\admin was accepted: is the CRD installed from config/crd/bases?`)
	}
}

// checkWebServerSample: a Deployment whose RuntimeClass is one the operator
// keeps, with an image of that RuntimeClass's release (a 2019 image under
// windows-2019), and a Service that selects its pods.
func checkWebServerSample(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if len(objs) != 2 || objs[0].GetKind() != "Deployment" || objs[1].GetKind() != "Service" {
		t.Fatalf("samples/windows-web-server.yaml should hold a Deployment and a Service, has %d objects", len(objs))
	}
	rc, _, _ := unstructured.NestedString(objs[0].Object, "spec", "template", "spec", "runtimeClassName")
	if _, ok := runtimeclass.WindowsReleases[rc]; !ok {
		t.Errorf("the sample's runtimeClassName %q is none the operator keeps", rc)
	}
	containers, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
	release := strings.TrimPrefix(rc, "windows-")
	for _, c := range containers {
		if image, _ := c.(map[string]any)["image"].(string); !strings.HasSuffix(image, ":ltsc"+release) {
			t.Errorf("the sample's image %s is not of Windows Server %s, its RuntimeClass's release", image, release)
		}
	}
	podLabels, _, _ := unstructured.NestedStringMap(objs[0].Object, "spec", "template", "metadata", "labels")
	selector, _, _ := unstructured.NestedStringMap(objs[1].Object, "spec", "selector")
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("the sample's Service selects %s=%s, which its pods do not carry", k, v)
		}
	}
}
