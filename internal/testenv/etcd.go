package testenv

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
)

// startEtcd starts etcd on the client and peer ports, waits until it is
// healthy and returns its client URL. --unsafe-no-fsync: the data lives
// for one test run.
func (e *Env) startEtcd(ctx context.Context, clientPort, peerPort int) (string, error) {
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd, err := startProcess(e.Dir, "etcd", filepath.Join(e.binDir, "etcd"),
		"--name=default", "--data-dir="+filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return "", err
	}
	e.procs = append(e.procs, etcd)
	return etcdURL, waitHTTP(ctx, etcd, http.DefaultClient, etcdURL+"/health")
}
