// Package promrules holds only a test: config/prometheus/prometheusrule.yaml
// is read with Prometheus' rule file parser (model/rulefmt, what
// `promtool check rules` and Prometheus itself use: group and rule names,
// every expression parsed as PromQL), and its rules are evaluated by
// Prometheus' engine over series of the names and labels windows_exporter
// v0.27.2 serves, so that each Windows node gets a CPU figure.
//
//	go -C hack/tools/promrules test ./...
package promrules
