package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// startScheduler starts kube-scheduler on port with its own client
// certificate (system:kube-scheduler, which the API server's bootstrap RBAC
// lets schedule), and waits until it is healthy: pods without a nodeName
// are then bound to fitting nodes, as in any cluster.
func (e *Env) startScheduler(ctx context.Context, port int) error {
	p := e.pki.path
	kubeconfig := filepath.Join(e.Dir, "scheduler.kubeconfig")
	if err := writeKubeconfig(kubeconfig, e.Host, p("ca.crt"), "system:kube-scheduler", p("scheduler.crt"), p("scheduler.key")); err != nil {
		return err
	}
	sched, err := startProcess(e.Dir, "kube-scheduler", filepath.Join(e.binDir, "kube-scheduler"),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--leader-elect=false",
		"--profiling=false",
		"--v=1")
	if err != nil {
		return err
	}
	e.procs = append(e.procs, sched)
	// /healthz of the secure port answers anonymously (the scheduler's
	// default --authorization-always-allow-paths), over its self-signed
	// certificate.
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	return waitFor(ctx, sched, "kube-scheduler /healthz", func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		res, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, nil
	})
}
