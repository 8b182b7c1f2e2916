package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// winnodectl runs winnodectl against the world's cluster, with the
// operator's namespace (its key, Secret cloud-private-key).
func (w *world) winnodectl(args ...string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	args = append(args, "--kubeconfig", w.env.KubeconfigPath, "--namespace", Namespace)
	code = cli.Execute(context.Background(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// TestServiceLogsRotate: with the operator's --log-file-size at 600 bytes,
// winnode-service.exe rotates the kubelet's log as it grows, and a restart
// of the service deletes the copies older than --log-file-age (a copy
// planted with a 2020 time) and keeps the newer ones. csi-proxy logs to
// its own folder. winnodectl logs reads a log with --tail applied, and
// names a log that is not there. It reads through the API server's node
// proxy, or over SSH when that fails (a plain go test run: the node proxy
// refuses a node at a loopback address); TestLogsThroughTheKubelet checks
// which.
func TestServiceLogsRotate(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{logs: &logrotate.Limits{Size: 600, Age: time.Hour}})
	w.instanceFor(t, "rotating", h)
	w.waitReady(t, "rotating", 3*time.Minute)

	current, err := h.Path(plan.KubeletLogFile)
	if err != nil {
		t.Fatal(err)
	}
	backups := func() []string { b, _ := logrotate.Backups(current); return b }
	testkit.Eventually(t, 3*time.Minute, "a rotated copy of the kubelet's log", func() (bool, string) {
		fi, err := os.Stat(current)
		if err != nil {
			return false, err.Error()
		}
		return len(backups()) > 0, fmt.Sprintf("%s: %d bytes; copies: %v", current, fi.Size(), backups())
	})
	for _, b := range backups() {
		if fi, err := os.Stat(b); err != nil || fi.Size() > 600+logrotate.Slack {
			t.Errorf("rotated copy %s: %v, %v bytes; want at most the size limit and a line", b, err, fi.Size())
		}
	}

	// A copy last written in 2020 goes at the next opening of the log;
	// the newer copies stay.
	planted := filepath.Join(filepath.Dir(current), "kubelet-20200101-000000.log")
	if err := os.WriteFile(planted, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(planted, old, old); err != nil {
		t.Fatal(err)
	}
	newer := backups()
	if err := h.CrashService(plan.KubeletService); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 2*time.Minute, "the 2020 copy deleted by the restarted kubelet service", func() (bool, string) {
		_, err := os.Stat(planted)
		return os.IsNotExist(err), strings.Join(backups(), ", ")
	})
	for _, b := range newer {
		if _, err := os.Stat(b); err != nil && b != planted {
			t.Errorf("copy %s, newer than the age limit, was deleted: %v", b, err)
		}
	}

	checkLogsCommand(t, w, h, current)
}

// checkLogsCommand reads the host's logs with winnodectl logs: through the
// kubelet, or over SSH (the stderr says) when the node proxy refuses the
// host's loopback address (a plain go test run). At 600 bytes the current
// file holds few lines: --tail 1 prints its last one.
func checkLogsCommand(t *testing.T, w *world, h *winsim.Host, current string) {
	t.Helper()
	code, out, errOut := w.winnodectl("logs", "rotating", "kubelet", "--tail", "1")
	file, err := os.ReadFile(current)
	if err != nil {
		t.Fatal(err)
	}
	overSSH := strings.Contains(errOut, "over SSH")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(string(file), out) || (netip.MustParseAddr(h.IP()).IsLoopback() && !overSSH) {
		t.Errorf("winnodectl logs --tail 1: exit %d, stdout:\n%s\nstderr: %s\nthe file:\n%s", code, out, errOut, file)
	}
	code, out, errOut = w.winnodectl("logs", "rotating", "csi-proxy")
	if code != 0 || !strings.Contains(strings.ToLower(out), "csi-proxy") {
		t.Errorf("winnodectl logs csi-proxy: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	code, _, errOut = w.winnodectl("logs", "rotating", "no-such-service")
	if code == 0 || !strings.Contains(errOut, "no-such-service/no-such-service.log") || !strings.Contains(errOut, `C:\var\log\no-such-service\no-such-service.log`) {
		t.Errorf("winnodectl logs of a service with no log: exit %d, stderr %s; want a failure naming the file", code, errOut)
	}
	code, _, errOut = w.winnodectl("logs", "rotating", "--tail", "-5")
	if code != cli.ExitUsage {
		t.Errorf("--tail -5: exit %d (%s), want %d", code, errOut, cli.ExitUsage)
	}
}

// TestLogsThroughTheKubelet: the API server reaches the stand-in kubelet
// at its InternalIP over TLS (the approved serving certificate, checked
// against the cluster CA; its kubelet client certificate authorized by
// the kubelet's SubjectAccessReview): `kubectl logs` of a pod on the
// Windows node works. The node's logs at /logs/ are read with the API
// server's own client certificate: a file, the listing, a missing file
// (404), and no certificate (401); and through the API server's node proxy
// (kubectl get --raw, winnodectl logs) when the host's address is routable
// (hack/test-e2e.sh), which the node proxy refuses for a loopback one.
func TestLogsThroughTheKubelet(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "kubelet-logs", h)
	nodeName := w.waitReady(t, "kubelet-logs", 3*time.Minute).Status.NodeName
	pod := w.podOn(t, nodeName)
	ctx := context.Background()

	// The serving certificate is approved after the node is Ready: until
	// then the kubelet cannot serve, as the real one cannot.
	var logs []byte
	testkit.Eventually(t, 2*time.Minute, "kubectl logs of the pod on the Windows node", func() (bool, string) {
		var err error
		logs, err = w.kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "iis"}).DoRaw(ctx)
		return err == nil, fmt.Sprintf("%v %s", err, logs)
	})
	if !strings.Contains(string(logs), "container iis of pod default/"+pod.Name+" started") {
		t.Errorf("kubectl logs printed %q", logs)
	}
	node, err := w.kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("https://%s:%d", h.IP(), node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	asAPIServer, anonymous := kubeletClients(t, w)
	for _, tc := range []struct {
		client *http.Client
		path   string
		code   int
		want   string
	}{
		{asAPIServer, "/logs/kubelet/kubelet.log", http.StatusOK, "kubelet (simulated by winsim)"},
		{asAPIServer, "/logs/", http.StatusOK, "csi-proxy/"},
		{asAPIServer, "/logs/kubelet/no-such.log", http.StatusNotFound, "404 page not found"},
		{asAPIServer, "/healthz", http.StatusOK, "ok"},
		{anonymous, "/logs/kubelet/kubelet.log", http.StatusUnauthorized, "Unauthorized"},
	} {
		res, err := tc.client.Get(base + tc.path)
		if err != nil {
			t.Errorf("GET %s: %v", tc.path, err)
			continue
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET %s: %d %.300s; want %d with %q", tc.path, res.StatusCode, body, tc.code, tc.want)
		}
	}
	w.checkNodeProxyLogs(t, nodeName, netip.MustParseAddr(h.IP()).IsLoopback())
}

// checkNodeProxyLogs: through the API server's node proxy (as kubectl get
// --raw and winnodectl logs read it) the node's kubelet log is served, and
// winnodectl logs reads it so, without falling back to SSH. On a loopback
// address (a plain go test run; hack/test-e2e.sh gives the hosts routable
// ones) the API server refuses the node proxy, and winnodectl logs says it
// falls back to SSH.
func (w *world) checkNodeProxyLogs(t *testing.T, nodeName string, loopback bool) {
	t.Helper()
	body, err := w.kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", nodeName, "proxy", "logs", "kubelet", "kubelet.log").Do(context.Background()).Raw()
	code, out, errOut := w.winnodectl("logs", "kubelet-logs", "kubelet", "--tail", "1")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Errorf("winnodectl logs kubelet-logs: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if loopback {
		if err == nil || !strings.Contains(err.Error()+string(body), "address not allowed") || !strings.Contains(errOut, "reading it over SSH") {
			t.Errorf("node proxy to a loopback address: %v %.300s; winnodectl logs stderr %q; want the API server's refusal and the SSH fallback", err, body, errOut)
		}
		return
	}
	if err != nil || !strings.Contains(string(body), "kubelet (simulated by winsim)") {
		t.Errorf("the kubelet's log through the API server's node proxy: %v %.300s", err, body)
	}
	if strings.Contains(errOut, "over SSH") {
		t.Errorf("winnodectl logs fell back to SSH with the node proxy working: %s", errOut)
	}
}

// kubeletClients are HTTPS clients that trust the cluster CA (which signs
// kubelets' serving certificates): one with the API server's kubelet
// client certificate, one with none.
func kubeletClients(t *testing.T, w *world) (*http.Client, *http.Client) {
	t.Helper()
	ca, err := os.ReadFile(w.env.CACertFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(w.env.KubeletClientCertFile, w.env.KubeletClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	client := func(certs []tls.Certificate) *http.Client {
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12},
		}}
	}
	return client([]tls.Certificate{cert}), client(nil)
}

// TestGatherWithAHostDown: winnodectl gather writes one archive with the
// instances, the Windows Nodes, their events, and each reachable host's
// agent info and service logs; a host that is down gets a note saying
// why, and the archive is still written.
func TestGatherWithAHostDown(t *testing.T) {
	w := getWorld(t)
	up, down := w.newHost(t), w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "gather-up", up)
	w.instanceFor(t, "gather-down", down)
	w.waitReady(t, "gather-up", 3*time.Minute)
	w.waitReady(t, "gather-down", 3*time.Minute)
	down.PowerOff()

	file := filepath.Join(t.TempDir(), "case.tar.gz")
	code, out, errOut := w.winnodectl("gather", "--output", file, "--connect-timeout", "5s")
	if code != 0 || !strings.Contains(errOut, "gather-down") {
		t.Fatalf("gather: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	files := readArchive(t, file)
	for name, want := range map[string]string{
		"cluster/windowsinstances.yaml":     "gather-up",
		"cluster/nodes.yaml":                strings.ToLower(up.Hostname()),
		"hosts/gather-up/info.json":         `"hostname"`,
		"hosts/gather-up/kubelet.log":       "kubelet (simulated by winsim)",
		"hosts/gather-up/csi-proxy.log":     "Starting CSI-Proxy Server",
		"hosts/gather-down/UNREACHABLE.txt": "could not be reached",
	} {
		if got, ok := files[name]; !ok || !strings.Contains(got, want) {
			t.Errorf("%s in the archive: present %t, lacks %q:\n%.500s", name, ok, want, got)
		}
	}
	for name, content := range files {
		if strings.Contains(content, "PRIVATE KEY") {
			t.Errorf("%s in the archive holds a private key", name)
		}
	}
}

// readArchive is each file of a gzipped tar archive, by name.
func readArchive(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = string(data)
	}
}
