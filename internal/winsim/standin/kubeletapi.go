package standin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's HTTPS API, as far as winnode touches it: /healthz, /logs/
// (the node's log folder, which `kubectl get --raw
// /api/v1/nodes/NODE/proxy/logs/...`, `oc adm node-logs` and `winnodectl
// logs` read) and /containerLogs/ (`kubectl logs`). Copied from
// pkg/kubelet/server/server.go:
//
//   - TLS with the serving certificate of serverTLSBootstrap, once it is
//     signed (until then every handshake fails, as the real kubelet's
//     certificate manager has no certificate to offer);
//   - authentication by a client certificate of authentication.x509's
//     clientCAFile (anonymous requests are refused: anonymous.enabled is
//     false in winnode's configuration), 401 otherwise;
//   - authorization by a SubjectAccessReview (authorization.mode Webhook)
//     of verb get on nodes/<subresource>: log for /logs/, proxy for the
//     rest (the kubelet's own mapping), 403 when denied;
//   - /logs/ is http.FileServer over the log folder, C:\var\log on Windows
//     (404 "404 page not found" for a missing file, a listing for a folder),
//     only with enableSystemLogHandler and enableDebuggingHandlers;
//     /containerLogs/NS/POD/CONTAINER the container's output.
//
// Differences: the real kubelet listens on every address at port 10250;
// the stand-in listens on the node's IP at a port of its own, reported in
// the Node's status.daemonEndpoints.kubeletEndpoint.port as the real one
// reports its --port (the API server dials that port), since simulated
// hosts share one machine's ports.

// apiServer is the stand-in kubelet's HTTPS server.
type apiServer struct {
	k        *kubelet
	certFile string
	clientCA *x509.CertPool
	logDir   string

	mu   sync.Mutex
	cert *tls.Certificate
	mod  time.Time
}

// serveAPI listens on the node's IP and serves the kubelet's API until ctx
// ends; it returns the port.
func (k *kubelet) serveAPI(ctx context.Context) (int32, error) {
	certDir, err := hostPath(k.flags.certDir)
	if err != nil {
		return 0, err
	}
	s := &apiServer{k: k, certFile: filepath.Join(certDir, serverCertFile)}
	if s.logDir, err = hostPath(`C:\var\log`); err != nil {
		return 0, err
	}
	if s.clientCA, err = loadClientCA(k.config.Authentication.X509.ClientCAFile); err != nil {
		return 0, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(k.nodeIP, "0"))
	if err != nil {
		return 0, fmt.Errorf("listening for the kubelet's API on %s: %w", k.nodeIP, err)
	}
	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			ClientAuth:     tls.VerifyClientCertIfGiven,
			ClientCAs:      s.clientCA,
			GetCertificate: s.certificate,
		},
	}
	go func() { _ = srv.ServeTLS(&firewalled{Listener: ln, k: k}, "", "") }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	k.log.Infof("serving the kubelet API on %s (simulated: /healthz, /logs/, /containerLogs/)", ln.Addr())
	return int32(port), nil
}

// firewalled is the kubelet's listener behind the host's network: while
// the simulated host has a network firewall outside it that rejects the
// kubelet's port (winsim Options.KubeletPortBlocked, asked of the host on
// each connection so a test can put and lift it), each connection is reset
// at once. A firewall that rejects (iptables' REJECT --reject-with
// tcp-reset, a firewall appliance's "reset" action) answers the API
// server's connection with a TCP reset and the kubelet never sees it; the
// simulation can only reset after the loopback handshake, so the API
// server reads "connection reset by peer" where it would read "connection
// refused". The kubelet itself serves on, as the real one does.
type firewalled struct {
	net.Listener
	k *kubelet
}

func (f *firewalled) Accept() (net.Conn, error) {
	for {
		conn, err := f.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !f.blocked() {
			return conn, nil
		}
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0) // close with a reset, not a FIN
		}
		f.k.log.Infof("simulated network firewall: connection from %s to the kubelet's port rejected (reset)", conn.RemoteAddr())
		_ = conn.Close()
	}
}

// blocked asks the simulated host whether its network blocks the kubelet's
// port; a host that does not answer blocks nothing.
func (f *firewalled) blocked() bool {
	if f.k.scm == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hi, err := f.k.scm.Host(ctx)
	return err == nil && hi.KubeletPortBlocked
}

// loadClientCA reads authentication.x509.clientCAFile; without one no
// client certificate is accepted (every request but /healthz is 401, as
// the stand-in has no token authentication), and one that cannot be read
// stops the kubelet, as the real one's "unable to load client CA file".
func loadClientCA(file string) (*x509.CertPool, error) {
	if file == "" {
		return x509.NewCertPool(), nil
	}
	local, err := hostPath(file)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return nil, fmt.Errorf("unable to load client CA file %s: %w", file, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("unable to load client CA file %s: no certificate in it", file)
	}
	return pool, nil
}

// certificate is the serving certificate on disk, read again when the file
// changes (a renewal); none yet fails the handshake.
func (s *apiServer) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	fi, err := os.Stat(s.certFile)
	if err != nil {
		return nil, errors.New("no serving certificate yet")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert == nil || !fi.ModTime().Equal(s.mod) {
		cert, err := tls.LoadX509KeyPair(s.certFile, s.certFile)
		if err != nil {
			return nil, err
		}
		s.cert, s.mod = &cert, fi.ModTime()
	}
	return s.cert, nil
}

func (s *apiServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	if debugging(s.k) {
		mux.Handle("/logs/", http.StripPrefix("/logs/", http.FileServer(http.Dir(s.logDir))))
		mux.HandleFunc("/containerLogs/", s.containerLogs)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && !s.allowed(w, r) {
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// debugging says whether the debugging handlers are on (both default to
// true in the kubelet).
func debugging(k *kubelet) bool {
	c := k.config
	return (c.EnableDebuggingHandlers == nil || *c.EnableDebuggingHandlers) &&
		(c.EnableSystemLogHandler == nil || *c.EnableSystemLogHandler)
}

// allowed authenticates the client certificate and asks the API server
// whether its user may get nodes/<subresource> of this node.
func (s *apiServer) allowed(w http.ResponseWriter, r *http.Request) bool {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return false
	}
	leaf := r.TLS.VerifiedChains[0][0]
	subresource := "proxy"
	if strings.HasPrefix(r.URL.Path, "/logs/") {
		subresource = "log"
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   leaf.Subject.CommonName,
		Groups: leaf.Subject.Organization,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Resource: "nodes", Subresource: subresource, Name: s.k.nodeName,
		},
	}}
	got, err := s.k.client.AuthorizationV1().SubjectAccessReviews().Create(r.Context(), review, metav1.CreateOptions{})
	if err != nil {
		http.Error(w, "Authorization error (user="+leaf.Subject.CommonName+", verb=get, resource=nodes, subresource="+subresource+")", http.StatusInternalServerError)
		return false
	}
	if !got.Status.Allowed {
		http.Error(w, "Forbidden (user="+leaf.Subject.CommonName+", verb=get, resource=nodes, subresource="+subresource+")", http.StatusForbidden)
		return false
	}
	return true
}

// containerLogs serves /containerLogs/NS/POD/CONTAINER: the simulated
// container's output (podnet.go's start lines), 404 for a pod or container
// the kubelet does not run.
func (s *apiServer) containerLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.Error(w, `Bad Request: "/containerLogs/NAMESPACE/POD/CONTAINER"`, http.StatusBadRequest)
		return
	}
	text, ok := s.k.containerOutput(parts[0], parts[1], parts[2])
	if !ok {
		http.Error(w, fmt.Sprintf("container %q in pod %q is not available", parts[2], parts[1]), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(text))
}

// containerOutput is what a simulated container printed: no process runs,
// so its output is one line saying it started, with the time its status
// gives. ok is false for a pod not Running on this node or a container it
// lacks.
func (k *kubelet) containerOutput(namespace, name, container string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod, err := k.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || pod.Spec.NodeName != k.nodeName {
		return "", false
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name != container || c.State.Running == nil {
			continue
		}
		return fmt.Sprintf("%s container %s of pod %s/%s started from image %s (simulated by winsim: no process runs in it)\n",
			c.State.Running.StartedAt.UTC().Format(time.RFC3339), container, namespace, name, c.Image), true
	}
	return "", false
}
