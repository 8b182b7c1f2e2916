package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/winnode/winnode/internal/plan"
)

// logWatch is a log that tells when a line containing a string is written.
type logWatch struct {
	mu    sync.Mutex
	lines strings.Builder
	want  map[string]chan struct{}
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines.Write(p)
	for s, ch := range w.want {
		if strings.Contains(string(p), s) {
			close(ch)
			delete(w.want, s)
		}
	}
	return len(p), nil
}

// seen is closed once a line containing s is logged.
func (w *logWatch) seen(s string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.want[s] = ch
	return ch
}

// wait-certificate waits while the kubelet's file is missing, then while it
// holds no certificate and key, saying each in the log, and ends once it
// holds both in one PEM as the kubelet writes them.
func TestWaitCertificateWaitsForTheKubeletsFile(t *testing.T) {
	root := tempDir(t)
	logs := &logWatch{want: map[string]chan struct{}{}}
	missing, garbled := logs.seen("does not exist yet"), logs.seen("holds no certificate and key")
	a := &Agent{Platform: rootPlatform{root: root}, Log: slog.New(slog.NewTextHandler(logs, nil))}
	file := filepath.Join(root, "var", "lib", "kubelet", "pki", "kubelet-server-current.pem")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		doc *WaitCertificateDocument
		err error
	}
	done := make(chan result, 1)
	go func() {
		doc, err := a.WaitCertificate(ctx, WaitCertificateOptions{PollInterval: 5 * time.Millisecond})
		done <- result{doc, err}
	}()
	<-missing
	// The certificate alone: no key yet.
	certPEM, keyPEM := selfSigned(t)
	if err := os.WriteFile(file, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	<-garbled
	if err := os.WriteFile(file, append(certPEM, keyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.doc.File != plan.KubeletServingCertPath || r.doc.NotAfter.IsZero() {
		t.Fatalf("wait-certificate: %+v, %v; log:\n%s", r.doc, r.err, logs.lines.String())
	}
}

// Stopped while waiting, it fails naming what it waited for.
func TestWaitCertificateStopped(t *testing.T) {
	logs := &logWatch{want: map[string]chan struct{}{}}
	waiting := logs.seen("msg=waiting")
	a := &Agent{Platform: rootPlatform{root: tempDir(t)}, Log: slog.New(slog.NewTextHandler(logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-waiting; cancel() }() // the service stopped
	_, err := a.WaitCertificate(ctx, WaitCertificateOptions{PollInterval: 5 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), `kubelet-server-current.pem does not exist yet`) {
		t.Errorf("stopped while waiting: %v", err)
	}
}

// selfSigned is a serving certificate and its key (PEM).
func selfSigned(t *testing.T) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "system:node:win-1"}, key)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}
