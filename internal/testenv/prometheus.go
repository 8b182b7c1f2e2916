package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"
)

// A real Prometheus server for the end-to-end tests of node metrics: the
// Prometheus server of github.com/prometheus/prometheus at the version
// hack/tools/prometheus/go.mod pins, built from source by
// hack/tools/build-prometheus.sh (with Kubernetes service discovery and no
// other), started here with the configuration a test writes.

// EnvPrometheusBin names the environment variable with the path of the
// prometheus program (hack/test.sh sets it); without it
// hack/tools/build-prometheus.sh builds it (once, then from its cache).
const EnvPrometheusBin = "WINNODE_PROMETHEUS_BIN"

var prometheusProgram = &toolProgram{env: EnvPrometheusBin, script: "hack/tools/build-prometheus.sh", what: "Prometheus"}

// Prometheus is a Prometheus server the environment started.
type Prometheus struct {
	// URL is the server's address (http://127.0.0.1:port), its HTTP API
	// under /api/v1.
	URL  string
	proc *process
}

// StartPrometheus starts a Prometheus server with the configuration file
// configFile (prometheus.yml: scrape configurations, rule files), its data
// and its log (name.log) in the environment's folder, and waits until it
// is ready (/-/ready). A configuration Prometheus refuses, or a rule file
// it cannot load, makes it exit, and StartPrometheus return its error with
// the log's tail. It is stopped with the environment, or by Stop.
// Like the rest of Env, not to be called from parallel goroutines.
func (e *Env) StartPrometheus(ctx context.Context, name, configFile string) (*Prometheus, error) {
	bin, err := prometheusProgram.binary()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		p, err := e.startPrometheus(ctx, bin, name+"-"+strconv.Itoa(attempt), configFile)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == 3 {
			return p, err
		}
	}
}

// startPrometheus is one attempt of StartPrometheus, on a port found free.
func (e *Env) startPrometheus(ctx context.Context, bin, name, configFile string) (*Prometheus, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	address := "127.0.0.1:" + strconv.Itoa(ports[0])
	proc, err := startProcess(e.Dir, name, bin,
		"--config.file="+configFile,
		"--storage.tsdb.path="+filepath.Join(e.Dir, name+"-data"),
		"--web.listen-address="+address)
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, proc)
	p := &Prometheus{URL: "http://" + address, proc: proc}
	if err := waitHTTP(ctx, proc, &http.Client{Timeout: 5 * time.Second}, p.URL+"/-/ready"); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w; the last lines of its log %s:\n%s", err, proc.logPath, proc.tail(20))
	}
	return p, nil
}

// Stop stops the server.
func (p *Prometheus) Stop() { p.proc.stop(10 * time.Second) }

// Log is the tail of the server's log, for a failing test.
func (p *Prometheus) Log(lines int) string { return p.proc.tail(lines) }

// API GETs path of Prometheus' HTTP API (/api/v1/query, /api/v1/rules,
// ...) with the query parameters params and decodes the answer's data into
// data. An answer whose status is not "success" is an error with
// Prometheus' own words.
func (p *Prometheus) API(ctx context.Context, path string, params url.Values, data any) error {
	u := p.URL + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("Prometheus at %s: %w", p.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("Prometheus %s: %w", path, err)
	}
	var answer struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("Prometheus %s: HTTP %d, not its API's JSON (%w): %.200s", path, resp.StatusCode, err, body)
	}
	if answer.Status != "success" {
		return fmt.Errorf("Prometheus %s: %s: %s", path, answer.ErrorType, answer.Error)
	}
	if err := json.Unmarshal(answer.Data, data); err != nil {
		return fmt.Errorf("Prometheus %s: its data: %w", path, err)
	}
	return nil
}

// Sample is one series of an instant query's vector: its labels and value
// (as Prometheus writes it: "1", "0.25", "NaN").
type Sample struct {
	Metric map[string]string
	Value  string
}

// Query evaluates the PromQL expression expr now (/api/v1/query) and
// returns its vector.
func (p *Prometheus) Query(ctx context.Context, expr string) ([]Sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.API(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("Prometheus query %q: a %s, want a vector", expr, data.ResultType)
	}
	samples := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		samples = append(samples, Sample{Metric: r.Metric, Value: fmt.Sprint(r.Value[1])})
	}
	return samples, nil
}
