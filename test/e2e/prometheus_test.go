package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/controller/exporter"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
)

// What a real Prometheus (testenv.StartPrometheus) is given to scrape the
// simulated Windows nodes: the scrape configuration prometheus-operator
// generates from the ServiceMonitor winnode ships, and the rule groups of
// the PrometheusRule it ships as a rule file, both taken from
// `kustomize build` of config/prometheus (Kubernetes: the operator's CA) or
// config/prometheus-openshift (OpenShift: the service CA), so that what
// Prometheus runs here is what a cluster gets.

// The ServiceMonitor's fields this translation knows; the file is decoded
// strictly, so a field added to it fails the test until the translation
// below learns what prometheus-operator makes of it.
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		ServiceDiscoveryRole string `json:"serviceDiscoveryRole"`
		Selector             struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []serviceMonitorEndpoint `json:"endpoints"`
	} `json:"spec"`
}

type serviceMonitorEndpoint struct {
	Port      string `json:"port"`
	Path      string `json:"path"`
	Scheme    string `json:"scheme"`
	Interval  string `json:"interval"`
	TLSConfig struct {
		CA struct {
			ConfigMap configMapKey `json:"configMap"`
		} `json:"ca"`
		ServerName string `json:"serverName"`
	} `json:"tlsConfig"`
	Relabelings []struct {
		Action       string   `json:"action"`
		SourceLabels []string `json:"sourceLabels"`
		Separator    string   `json:"separator"`
		Regex        string   `json:"regex"`
		Replacement  string   `json:"replacement"`
		TargetLabel  string   `json:"targetLabel"`
	} `json:"relabelings"`
}

// configMapKey is a key of a ConfigMap in the ServiceMonitor's namespace.
type configMapKey struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// relabel is one entry of a scrape configuration's relabel_configs.
type relabel map[string]any

// scrapeConfigsFromServiceMonitor is the scrape configuration that
// prometheus-operator generates for the ServiceMonitor in data, one job
// per endpoint, as its pkg/prometheus/promcfg.go
// (generateServiceMonitorConfig; its golden files under
// pkg/prometheus/testdata show the same) writes it for an EndpointSlice
// ServiceMonitor with a matchLabels selector, no namespaceSelector (the
// ServiceMonitor's own namespace), one shard and no jobLabel:
// the job's name serviceMonitor/<namespace>/<name>/<index>; Kubernetes
// discovery of role endpointslice in that namespace; a keep of the
// Services whose labels match, then of the endpoint's port name; the
// labels node (an endpoint whose target is a Node), pod, namespace,
// service, container, job (the Service's name) and endpoint (the port's
// name); then the endpoint's own relabelings; then the sharding pair
// (hashmod of __address__, keep shard 0: the one shard keeps every
// target). A ConfigMap's CA is a file the operator mounts at
// /etc/prometheus/certs/configmap_<namespace>_<name>_<key> (here certDir
// takes that place: caFile), and tlsConfig.serverName is the
// tls_config's server_name (promcfg.go's addTLStoYaml). scrapeInterval, when not zero, replaces the
// endpoint's interval (the test's only departure: its rules need two
// samples, which at 30 s would take a minute).
func scrapeConfigsFromServiceMonitor(data []byte, certDir string, scrapeInterval time.Duration) ([]map[string]any, error) {
	var sm serviceMonitor
	if err := yaml.UnmarshalStrict(data, &sm); err != nil {
		return nil, fmt.Errorf("the ServiceMonitor (a field this translation does not know?): %w", err)
	}
	if sm.Kind != "ServiceMonitor" || sm.APIVersion != "monitoring.coreos.com/v1" {
		return nil, fmt.Errorf("a %s %s, want a monitoring.coreos.com/v1 ServiceMonitor", sm.APIVersion, sm.Kind)
	}
	if sm.Spec.ServiceDiscoveryRole != "EndpointSlice" {
		return nil, fmt.Errorf("ServiceMonitor %s: serviceDiscoveryRole %q; this translation knows EndpointSlice", sm.Metadata.Name, sm.Spec.ServiceDiscoveryRole)
	}
	var configs []map[string]any
	for i, ep := range sm.Spec.Endpoints {
		cfg := map[string]any{
			"job_name":     fmt.Sprintf("serviceMonitor/%s/%s/%d", sm.Metadata.Namespace, sm.Metadata.Name, i),
			"honor_labels": false,
			"kubernetes_sd_configs": []map[string]any{{
				"role":       "endpointslice",
				"namespaces": map[string]any{"names": []string{sm.Metadata.Namespace}},
			}},
			"scrape_interval": ep.Interval,
			"metrics_path":    ep.Path,
			"scheme":          ep.Scheme,
			"relabel_configs": serviceMonitorRelabels(sm, ep),
		}
		if scrapeInterval != 0 {
			cfg["scrape_interval"] = scrapeInterval.String()
		}
		tlsConfig := map[string]any{}
		if cm := ep.TLSConfig.CA.ConfigMap; cm.Name != "" {
			tlsConfig["ca_file"] = caFile(certDir, sm.Metadata.Namespace, cm)
		}
		if ep.TLSConfig.ServerName != "" {
			tlsConfig["server_name"] = ep.TLSConfig.ServerName
		}
		if len(tlsConfig) > 0 {
			cfg["tls_config"] = tlsConfig
		}
		configs = append(configs, cfg)
	}
	return configs, nil
}

// caFile is where prometheus-operator mounts the key of a ConfigMap in
// namespace that a tlsConfig names, certDir standing for
// /etc/prometheus/certs.
func caFile(certDir, namespace string, cm configMapKey) string {
	return filepath.Join(certDir, "configmap_"+namespace+"_"+cm.Name+"_"+cm.Key)
}

// serviceMonitorRelabels is the relabel_configs of one endpoint's job
// (scrapeConfigsFromServiceMonitor says which, in this order).
func serviceMonitorRelabels(sm serviceMonitor, ep serviceMonitorEndpoint) []relabel {
	rs := []relabel{{"source_labels": []string{"job"}, "target_label": "__tmp_prometheus_job_name"}}
	keys := make([]string, 0, len(sm.Spec.Selector.MatchLabels))
	for k := range sm.Spec.Selector.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := sanitizeLabelName(k)
		rs = append(rs, relabel{"action": "keep",
			"source_labels": []string{"__meta_kubernetes_service_label_" + name, "__meta_kubernetes_service_labelpresent_" + name},
			"regex":         "(" + sm.Spec.Selector.MatchLabels[k] + ");true"})
	}
	target := []string{"__meta_kubernetes_endpointslice_address_target_kind", "__meta_kubernetes_endpointslice_address_target_name"}
	rs = append(rs,
		relabel{"action": "keep", "source_labels": []string{"__meta_kubernetes_endpointslice_port_name"}, "regex": ep.Port},
		relabel{"source_labels": target, "separator": ";", "regex": "Node;(.*)", "replacement": "${1}", "target_label": "node"},
		relabel{"source_labels": target, "separator": ";", "regex": "Pod;(.*)", "replacement": "${1}", "target_label": "pod"},
		relabel{"source_labels": []string{"__meta_kubernetes_namespace"}, "target_label": "namespace"},
		relabel{"source_labels": []string{"__meta_kubernetes_service_name"}, "target_label": "service"},
		relabel{"source_labels": []string{"__meta_kubernetes_pod_name"}, "target_label": "pod"},
		relabel{"source_labels": []string{"__meta_kubernetes_pod_container_name"}, "target_label": "container"},
		relabel{"source_labels": []string{"__meta_kubernetes_service_name"}, "target_label": "job", "replacement": "${1}"},
		relabel{"target_label": "endpoint", "replacement": ep.Port},
	)
	for _, r := range ep.Relabelings {
		own := relabel{}
		for key, value := range map[string]any{"action": r.Action, "separator": r.Separator, "regex": r.Regex,
			"replacement": r.Replacement, "target_label": r.TargetLabel} {
			if value != "" {
				own[key] = value
			}
		}
		if len(r.SourceLabels) > 0 {
			own["source_labels"] = r.SourceLabels
		}
		rs = append(rs, own)
	}
	return append(rs,
		relabel{"source_labels": []string{"__address__"}, "target_label": "__tmp_hash", "modulus": 1, "action": "hashmod"},
		relabel{"source_labels": []string{"__tmp_hash"}, "regex": "0", "action": "keep"})
}

// sanitizeLabelName is a Kubernetes label's name as Prometheus' Kubernetes
// discovery writes it in a label name: each character that is not a
// letter, digit or underscore becomes an underscore.
func sanitizeLabelName(name string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(name, "_")
}

// ruleFileFromPrometheusRule is a Prometheus rule file with the groups of
// the PrometheusRule in data (its spec.groups, as prometheus-operator
// writes them into the rule files it mounts).
func ruleFileFromPrometheusRule(data []byte) ([]byte, error) {
	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		return nil, fmt.Errorf("the PrometheusRule: %w", err)
	}
	if pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		return nil, fmt.Errorf("a %s with %d rule groups, want a PrometheusRule with some", pr.Kind, len(pr.Spec.Groups))
	}
	return yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
}

// prometheusUser is the identity the test's Prometheus discovers targets
// as: it gets only the Role config/openshift/prometheus_rbac.yaml grants
// OpenShift's Prometheus in winnode-system.
const prometheusUser = "winnode-e2e-prometheus"

// prometheusRig is a real Prometheus the test started, and where its
// scrape configuration's CA files come from.
type prometheusRig struct {
	*testenv.Prometheus
	// caFiles maps each CA file of the scrape configuration to the
	// ConfigMap key (in Namespace) it is a copy of.
	caFiles map[string]configMapKey
}

// startPrometheus starts a real Prometheus on the world's control plane
// that scrapes what the ServiceMonitor windows-exporter of `kustomize
// build config/<dir>` selects, with the rules of its PrometheusRule, every
// second, and evaluates them every second; its CA files are the
// ConfigMaps' keys as they are now. It discovers targets as
// prometheusUser, with the shipped Role.
func (w *world) startPrometheus(t *testing.T, dir string) *prometheusRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	work := t.TempDir()
	certDir := filepath.Join(work, "certs")
	monitor, rule := kustomizedMonitoring(ctx, t, dir)
	scrapes, err := scrapeConfigsFromServiceMonitor(monitor, certDir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := ruleFileFromPrometheusRule(rule)
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rbac, err := os.ReadFile(filepath.Join(root, "config/openshift/prometheus_rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kube := w.grantPrometheusRole(t, rbac)
	for _, sc := range scrapes {
		sd := sc["kubernetes_sd_configs"].([]map[string]any)[0]
		sd["api_server"] = kube.Host
		sd["tls_config"] = map[string]any{"ca_file": kube.CAFile, "cert_file": kube.CertFile, "key_file": kube.KeyFile}
	}
	config, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"rule_files":     []string{filepath.Join(work, "rules.yaml")},
		"scrape_configs": scrapes,
	})
	if err != nil {
		t.Fatal(err)
	}
	writeFileAtomically(t, filepath.Join(work, "rules.yaml"), rules)
	writeFileAtomically(t, filepath.Join(work, "prometheus.yaml"), config)
	rig := &prometheusRig{caFiles: caFilesOf(t, monitor, certDir)}
	rig.syncCAFiles(t, w)
	rig.Prometheus, err = w.env.StartPrometheus(ctx, "prometheus", filepath.Join(work, "prometheus.yaml"))
	if err != nil {
		t.Fatalf("Prometheus with the scrape configuration of config/%s's ServiceMonitor and its PrometheusRule's rules:\n%s\n%v", dir, config, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Prometheus' configuration:\n%s\nits log:\n%s", config, rig.Log(40))
		}
		rig.Stop()
	})
	return rig
}

// kustomizedMonitoring is the ServiceMonitor windows-exporter and the
// PrometheusRule of `kustomize build config/<dir>`, each a YAML document.
func kustomizedMonitoring(ctx context.Context, t *testing.T, dir string) (monitor, rule []byte) {
	t.Helper()
	out, err := testenv.KustomizeBuild(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("kustomize build config/%s: %v", dir, err)
		}
		switch {
		case head.Kind == "ServiceMonitor" && head.Metadata.Name == exporter.ServiceName:
			monitor = []byte(doc)
		case head.Kind == "PrometheusRule":
			rule = []byte(doc)
		}
	}
	if monitor == nil || rule == nil {
		t.Fatalf("kustomize build config/%s: no ServiceMonitor %s (%t) or no PrometheusRule (%t)", dir, exporter.ServiceName, monitor != nil, rule != nil)
	}
	return monitor, rule
}

// caFilesOf is each CA file the ServiceMonitor monitor's scrape
// configuration names (certDir standing for prometheus-operator's
// /etc/prometheus/certs), and the ConfigMap key it is a copy of.
func caFilesOf(t *testing.T, monitor []byte, certDir string) map[string]configMapKey {
	t.Helper()
	var sm serviceMonitor
	if err := yaml.Unmarshal(monitor, &sm); err != nil {
		t.Fatal(err)
	}
	files := map[string]configMapKey{}
	for _, ep := range sm.Spec.Endpoints {
		if cm := ep.TLSConfig.CA.ConfigMap; cm.Name != "" {
			files[caFile(certDir, sm.Metadata.Namespace, cm)] = cm
		}
	}
	return files
}

// syncCAFiles writes each CA file from its ConfigMap's key as it is now,
// as a cluster's Prometheus gets a changed ConfigMap: prometheus-operator
// copies the ConfigMaps a ServiceMonitor's tlsConfig names into the Secret
// it mounts in the Prometheus pod, the kubelet swaps the mounted files
// atomically, and Prometheus reads a changed CA file at its next scrape
// (prometheus/common's TLS round tripper compares the file's hash on each
// request, and makes new connections when it changed), with no reload.
func (r *prometheusRig) syncCAFiles(t *testing.T, w *world) {
	t.Helper()
	for file, key := range r.caFiles {
		cm, err := w.kube.CoreV1().ConfigMaps(Namespace).Get(context.Background(), key.Name, metav1.GetOptions{})
		if err != nil || cm.Data[key.Key] == "" {
			t.Fatalf("the CA of the scrape configuration, ConfigMap %s key %s: %v (keys %v)", key.Name, key.Key, err, slices.Sorted(maps.Keys(cm.Data)))
		}
		writeFileAtomically(t, file, []byte(cm.Data[key.Key]))
	}
}

// writeFileAtomically writes data to path (making its folder) through a
// rename, so that a reader never sees half of it.
func writeFileAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// grantPrometheusRole creates the Role of rbacYAML (a Role and its
// RoleBinding to OpenShift's Prometheus) in winnode-system, bound to
// prometheusUser, and returns that user's client configuration.
func (w *world) grantPrometheusRole(t *testing.T, rbacYAML []byte) clientFiles {
	t.Helper()
	ctx := context.Background()
	var role *rbacv1.Role
	for _, doc := range strings.Split(string(rbacYAML), "\n---\n") {
		var r rbacv1.Role
		if err := yaml.Unmarshal([]byte(doc), &r); err == nil && r.Kind == "Role" {
			role = &r
		}
	}
	if role == nil {
		t.Fatal("config/openshift/prometheus_rbac.yaml has no Role")
	}
	role.Name = prometheusUser
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: prometheusUser, Namespace: Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: prometheusUser}},
	}
	rbac := w.kube.RbacV1()
	_ = rbac.RoleBindings(Namespace).Delete(ctx, binding.Name, metav1.DeleteOptions{})
	_ = rbac.Roles(Namespace).Delete(ctx, role.Name, metav1.DeleteOptions{})
	if _, err := rbac.Roles(Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := w.env.UserConfig(prometheusUser)
	if err != nil {
		t.Fatal(err)
	}
	return clientFiles{Host: cfg.Host, CAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
}

// clientFiles is where a client finds the API server and its credentials.
type clientFiles struct{ Host, CAFile, CertFile, KeyFile string }

// checkPrometheusScrapes waits until Prometheus' rules are all loaded and
// healthy, it scrapes windows_exporter on each of nodes (up == 1) with
// the label instance the node's name (and node the same, namespace and
// service as the ServiceMonitor's), and the recording rules give each a
// CPU figure: its logical processors, its CPU use and its CPU seconds.
func checkPrometheusScrapes(t *testing.T, p *testenv.Prometheus, nodes []string) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, time.Minute, "Prometheus' rules loaded and evaluated without error", func() (bool, string) {
		var data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := p.API(ctx, "/api/v1/rules", nil, &data); err != nil {
			return false, err.Error()
		}
		var states []string
		ok := len(data.Groups) > 0
		for _, g := range data.Groups {
			for _, r := range g.Rules {
				if r.Health == "err" {
					t.Fatalf("Prometheus cannot evaluate rule %s of group %s: %s", r.Name, g.Name, r.LastError)
				}
				ok = ok && r.Health == "ok"
				states = append(states, r.Name+": "+r.Health)
			}
		}
		return ok, fmt.Sprintf("rules %v", states)
	})
	want := slices.Sorted(slices.Values(nodes))
	for _, q := range []struct{ expr, what string }{
		{`up{job="windows-exporter"} == 1`, "scraped"},
		{`instance:node_num_cpu:sum > 0`, "logical processors"},
		{`instance:node_cpu_utilisation:rate5m >= 0`, "CPU use"},
		{`instance:node_cpu:rate:sum >= 0`, "CPU seconds per second"},
	} {
		testkit.Eventually(t, time.Minute, "each node "+q.what+" ("+q.expr+")", func() (bool, string) {
			samples, err := p.Query(ctx, q.expr)
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, s := range samples {
				got = append(got, s.Metric["instance"])
				if q.what == "scraped" && (s.Metric["node"] != s.Metric["instance"] || s.Metric["namespace"] != Namespace || s.Metric["service"] != "windows-exporter") {
					t.Fatalf("the series %v: want instance and node the node's name, namespace %s, service windows-exporter", s.Metric, Namespace)
				}
			}
			sort.Strings(got)
			if slices.Equal(got, want) {
				return true, ""
			}
			return false, fmt.Sprintf("instances %v, want %v; targets: %s", got, want, targetHealth(ctx, p))
		})
	}
}

// target is one of Prometheus' active targets, as its targets API says.
type target struct {
	ScrapeURL string `json:"scrapeUrl"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

func activeTargets(ctx context.Context, p *testenv.Prometheus) ([]target, error) {
	var data struct {
		ActiveTargets []target `json:"activeTargets"`
	}
	err := p.API(ctx, "/api/v1/targets", nil, &data)
	return data.ActiveTargets, err
}

// targetHealth is each active target's address, health and last error,
// for a failing wait.
func targetHealth(ctx context.Context, p *testenv.Prometheus) string {
	targets, err := activeTargets(ctx, p)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, a := range targets {
		out = append(out, fmt.Sprintf("%s %s %s", a.ScrapeURL, a.Health, a.LastError))
	}
	return fmt.Sprintf("%q", out)
}

// TestServiceMonitorTranslationRefusesUnknownFields: a field of the shipped
// ServiceMonitor that the translation into a scrape configuration does not
// know is an error naming it, not a scrape configuration without it.
func TestServiceMonitorTranslationRefusesUnknownFields(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config/prometheus/servicemonitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scrapeConfigsFromServiceMonitor(data, "/certs", 0); err != nil {
		t.Fatalf("the shipped ServiceMonitor: %v", err)
	}
	changed := strings.Replace(string(data), "      scheme: https\n", "      scheme: https\n      honorLabels: true\n", 1)
	if changed == string(data) {
		t.Fatal("the shipped ServiceMonitor has no line '      scheme: https' to add a field after")
	}
	if _, err := scrapeConfigsFromServiceMonitor([]byte(changed), "/certs", 0); err == nil || !strings.Contains(err.Error(), "honorLabels") {
		t.Errorf("a ServiceMonitor with honorLabels: %v, want an error naming the field", err)
	}
}

// TestOpenShiftServiceMonitorTranslation: the scrape configuration of
// config/prometheus-openshift's ServiceMonitor verifies with the service CA
// bundle (the ConfigMap's service-ca.crt, where prometheus-operator mounts
// it) and the Service's name, which TestOpenShiftBYOH's Prometheus then
// runs; checked here too because a plain go test run skips that scrape.
func TestOpenShiftServiceMonitorTranslation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	monitor, _ := kustomizedMonitoring(ctx, t, "prometheus-openshift")
	scrapes, err := scrapeConfigsFromServiceMonitor(monitor, "/etc/prometheus/certs", 0)
	if err != nil || len(scrapes) != 1 {
		t.Fatalf("config/prometheus-openshift: %d scrape configurations, %v", len(scrapes), err)
	}
	want := map[string]any{
		"ca_file":     "/etc/prometheus/certs/configmap_" + Namespace + "_" + metricstls.CAConfigMapName + "_" + metricstls.ServiceCAKey,
		"server_name": metricstls.ServiceServerName(exporter.ServiceName, Namespace),
	}
	if got := scrapes[0]["tls_config"]; !reflect.DeepEqual(got, want) {
		t.Errorf("config/prometheus-openshift's tls_config %v, want %v", got, want)
	}
}
