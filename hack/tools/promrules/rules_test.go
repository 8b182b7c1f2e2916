package promrules

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	yaml "go.yaml.in/yaml/v3"
)

const ruleFile = "../../../config/prometheus/prometheusrule.yaml"

// groups is the PrometheusRule's spec: a rule file's content, as
// prometheus-operator hands it to Prometheus.
func groups(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Kind string         `yaml:"kind"`
		Spec map[string]any `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &obj); err != nil || obj.Kind != "PrometheusRule" {
		t.Fatalf("%s: kind %q, %v", ruleFile, obj.Kind, err)
	}
	out, err := yaml.Marshal(obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func parse(content []byte) (*rulefmt.RuleGroups, []error) {
	return rulefmt.Parse(content, false, model.UTF8Validation, parser.NewParser(parser.Options{}), promslog.NewNopLogger())
}

// The rules are a valid rule file to Prometheus, with the Linux node
// rules' names; a broken expression is refused (the check can fail).
func TestRulesParse(t *testing.T) {
	content := groups(t)
	rgs, errs := parse(content)
	if len(errs) > 0 {
		t.Fatalf("Prometheus refuses %s: %v", ruleFile, errs)
	}
	var names []string
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Record)
		}
	}
	for _, want := range []string{"instance:node_num_cpu:sum", "instance:node_cpu_utilisation:rate5m", "instance:node_cpu:rate:sum",
		"instance:node_memory_utilisation:ratio", "node:node_filesystem_usage:", "node:node_filesystem_avail:"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("no rule records %s (rules: %v)", want, names)
		}
	}
	broken := strings.Replace(string(content), "rate(windows_cpu_time_total", "rate(windows_cpu_time_total[", 1)
	if _, errs := parse([]byte(broken)); len(errs) == 0 {
		t.Error("a broken expression was accepted")
	}
}

// series of two Windows nodes, as windows_exporter v0.27.2 names and
// labels them (pkg/collector cpu, cs, memory, logical_disk), scraped every
// minute for 20 minutes: win-a has 2 processors 90 % idle, win-b 4 at
// 60 % idle; each core's idle counter grows by 60 s × share a minute.
const series = `
load 1m
  windows_cpu_time_total{job="windows-exporter",instance="win-a",core="0,0",mode="idle"} 0+54x20
  windows_cpu_time_total{job="windows-exporter",instance="win-a",core="0,0",mode="user"} 0+6x20
  windows_cpu_time_total{job="windows-exporter",instance="win-a",core="0,1",mode="idle"} 0+54x20
  windows_cpu_time_total{job="windows-exporter",instance="win-a",core="0,1",mode="user"} 0+6x20
  windows_cpu_time_total{job="windows-exporter",instance="win-b",core="0,0",mode="idle"} 0+36x20
  windows_cpu_time_total{job="windows-exporter",instance="win-b",core="0,0",mode="privileged"} 0+24x20
  windows_cpu_time_total{job="windows-exporter",instance="win-b",core="0,1",mode="idle"} 0+36x20
  windows_cpu_time_total{job="windows-exporter",instance="win-b",core="0,1",mode="privileged"} 0+24x20
  windows_cpu_time_total{job="windows-exporter",instance="win-b",core="0,2",mode="idle"} 0+36x20
  windows_cpu_time_total{job="windows-exporter",instance="win-b",core="0,2",mode="privileged"} 0+24x20
  windows_cpu_time_total{job="windows-exporter",instance="win-b",core="0,3",mode="idle"} 0+36x20
  windows_cpu_time_total{job="windows-exporter",instance="win-b",core="0,3",mode="privileged"} 0+24x20
  windows_cs_logical_processors{job="windows-exporter",instance="win-a"} 2x20
  windows_cs_logical_processors{job="windows-exporter",instance="win-b"} 4x20
  windows_cs_physical_memory_bytes{job="windows-exporter",instance="win-a"} 8000x20
  windows_cs_physical_memory_bytes{job="windows-exporter",instance="win-b"} 16000x20
  windows_memory_available_bytes{job="windows-exporter",instance="win-a"} 6000x20
  windows_memory_available_bytes{job="windows-exporter",instance="win-b"} 4000x20
  windows_logical_disk_size_bytes{job="windows-exporter",instance="win-a",volume="C:"} 100x20
  windows_logical_disk_free_bytes{job="windows-exporter",instance="win-a",volume="C:"} 25x20
  windows_logical_disk_size_bytes{job="windows-exporter",instance="win-b",volume="C:"} 200x20
  windows_logical_disk_free_bytes{job="windows-exporter",instance="win-b",volume="C:"} 150x20
  node_cpu_seconds_total{job="node-exporter",instance="linux-a",cpu="0",mode="idle"} 0+30x20
`

// Each rule, evaluated by Prometheus' engine at minute 15, gives every
// Windows node its figure, by the node's name, and nothing for the Linux
// node's series.
func TestRulesEvaluate(t *testing.T) {
	rgs, errs := parse(groups(t))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	storage := promqltest.LoadedStorage(t, series)
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	want := map[string]map[string]float64{
		"instance:node_num_cpu:sum":              {"win-a": 2, "win-b": 4},
		"instance:node_cpu_utilisation:rate5m":   {"win-a": 0.1, "win-b": 0.4},
		"instance:node_cpu:rate:sum":             {"win-a": 0.2, "win-b": 1.6},
		"instance:node_memory_utilisation:ratio": {"win-a": 0.25, "win-b": 0.75},
		"node:node_filesystem_usage:":            {"win-a/C:": 0.75, "win-b/C:": 0.25},
		"node:node_filesystem_avail:":            {"win-a/C:": 0.25, "win-b/C:": 0.75},
	}
	at := time.Unix(0, 0).Add(15 * time.Minute)
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			q, err := engine.NewInstantQuery(context.Background(), storage, nil, r.Expr, at)
			if err != nil {
				t.Fatalf("%s: %v", r.Record, err)
			}
			res := q.Exec(context.Background())
			vec, err := res.Vector()
			if err != nil {
				t.Fatalf("%s: %v", r.Record, err)
			}
			got := figures(vec)
			if fmt.Sprint(round(got)) != fmt.Sprint(round(want[r.Record])) {
				t.Errorf("%s = %v, want %v", r.Record, got, want[r.Record])
			}
			q.Close()
		}
	}
}

// figures are a result's values by instance (and volume, where there is one).
func figures(vec promql.Vector) map[string]float64 {
	out := map[string]float64{}
	for _, s := range vec {
		key := s.Metric.Get("instance")
		if v := s.Metric.Get("volume"); v != "" {
			key += "/" + v
		}
		out[key] = s.F
	}
	return out
}

func round(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = math.Round(v*1000) / 1000
	}
	return out
}
