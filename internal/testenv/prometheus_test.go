package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestPrometheusLoadsRulesOrFails: the test world's Prometheus evaluates
// the rules of the configuration it is given (a recording rule's series is
// there to query), and a rule file it cannot parse makes StartPrometheus
// fail with Prometheus' own words, so that a test handing it a broken rule
// fails.
func TestPrometheusLoadsRulesOrFails(t *testing.T) {
	env := Get(t)
	dir := t.TempDir()
	start := func(name, rules string) (*Prometheus, error) {
		t.Helper()
		rulesFile := filepath.Join(dir, name+"-rules.yaml")
		config := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(rulesFile, []byte(rules), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(config, []byte("global: {evaluation_interval: 1s}\nrule_files: ["+rulesFile+"]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return env.StartPrometheus(ctx, "prometheus-"+name, config)
	}

	p, err := start("good", "groups:\n- name: g\n  rules:\n  - record: winnode:one\n    expr: vector(1)\n")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var got []Sample
	// Until the first evaluation (every second) recorded it.
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = p.Query(ctx, "winnode:one")
		return len(got) > 0, err
	})
	if err != nil {
		t.Fatalf("the recorded series winnode:one: %v", err)
	}
	if len(got) != 1 || got[0].Value != "1" || got[0].Metric["__name__"] != "winnode:one" {
		t.Errorf("the recorded series: %+v, want winnode:one 1", got)
	}

	if _, err := start("bad", "groups:\n- name: g\n  rules:\n  - record: winnode:broken\n    expr: sum(\n"); err == nil || !strings.Contains(err.Error(), "could not parse expression") {
		t.Errorf("a rule Prometheus cannot parse: %v, want its parse error", err)
	}
}
