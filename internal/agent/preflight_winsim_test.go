//go:build !windows

package agent_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/preflight"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winsim"
)

// preflightInfo runs `info --preflight` with req on the host.
func preflightInfo(t *testing.T, h *simHost, req plan.PreflightRequest) plan.Info {
	t.Helper()
	body, _ := json.Marshal(req)
	sess, err := h.ssh.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var stdout, stderr bytes.Buffer
	sess.Stdin, sess.Stdout, sess.Stderr = bytes.NewReader(body), &stdout, &stderr
	if err := sess.Run(wincmd.Join(agentPath, "info", "--preflight")); err != nil {
		t.Fatalf("info --preflight: %v\nstdout: %s\nstderr: %s", err, stdout.Bytes(), stderr.Bytes())
	}
	var info plan.Info
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		t.Fatalf("info --preflight printed %s: %v", stdout.Bytes(), err)
	}
	return info
}

// newPreflightHost is a simulated host set up by opts, with the agent in
// place.
func newPreflightHost(t *testing.T, opts winsim.Options) *simHost {
	t.Helper()
	if testing.Short() {
		t.Skip("simulated-host tests build the agent; skipped with -short")
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	host, key := fixture.SimHost(t, opts)
	s := &simHost{t: t, host: host, ssh: fixture.Dial(t, host, key), scm: host.SCM()}
	s.put(agentPath, readFile(t, testenv.Binary(t, "cmd/winnode-agent")))
	return s
}

// apiServer is a TLS server standing for the API server, and the request
// that names it with its CA.
func apiServer(t *testing.T) plan.PreflightRequest {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return plan.PreflightRequest{APIServer: srv.URL, CAData: ca}
}

func results(info plan.Info) map[string]plan.PreflightResult {
	out := map[string]plan.PreflightResult{}
	for _, r := range info.Preflight {
		out[r.Check] = r
	}
	return out
}

// TestPreflightOnHealthyHost: a stock simulated host passes every host
// check, and reports its clock for the operator's.
func TestPreflightOnHealthyHost(t *testing.T) {
	h := newPreflightHost(t, winsim.Options{Build: "2022"})
	req := apiServer(t)
	req.Address, req.ListedByIP = h.host.IP(), true
	info := preflightInfo(t, h, req)
	got := results(info)
	for _, check := range []string{preflight.WindowsBuild, preflight.ContainersFeature, preflight.Disk, preflight.APIServer, preflight.Defender, preflight.Addressing} {
		if r, ok := got[check]; !ok || r.Result != plan.PreflightPass {
			t.Errorf("check %s: %+v, want pass", check, r)
		}
	}
	if info.System == nil || info.System.UBR == 0 {
		t.Fatalf("info.system = %+v, want the host's update revision", info.System)
	}
	if skew := time.Since(info.System.Clock); skew < -time.Minute || skew > time.Minute {
		t.Errorf("the host reported its clock as %s, %s from this machine's, with no offset set", info.System.Clock, skew)
	}
	// Without --preflight, info is as before: no checks run.
	if plain := h.info(); plain.Preflight != nil || plain.System != nil {
		t.Errorf("info without --preflight reported %+v %+v", plain.Preflight, plain.System)
	}
}

// TestPreflightOnBrokenHost: each condition set on the simulated host is
// the check's warning or failure, naming the fix; fixed on the host, it
// passes.
func TestPreflightOnBrokenHost(t *testing.T) {
	h := newPreflightHost(t, winsim.Options{
		Build: "2022", UBR: 643, FreeDiskGiB: 12, ClockOffset: -10 * time.Minute,
		WithoutContainersFeature: true, NoAPIRoute: true, DHCP: true, Defender: true,
	})
	req := apiServer(t)
	req.Address, req.ListedByIP = h.host.IP(), true
	info := preflightInfo(t, h, req)
	got := results(info)
	for check, want := range map[string]struct {
		result plan.PreflightOutcome
		word   string
	}{
		preflight.WindowsBuild:      {plan.PreflightFail, "KB5012637"},
		preflight.ContainersFeature: {plan.PreflightWarn, "restarts the host"},
		preflight.Disk:              {plan.PreflightFail, "12 GiB free"},
		preflight.APIServer:         {plan.PreflightFail, "connectex"},
		preflight.Defender:          {plan.PreflightPass, "exclusions"},
		preflight.Addressing:        {plan.PreflightWarn, "DHCP"},
	} {
		r := got[check]
		if r.Result != want.result || !strings.Contains(r.Message, want.word) {
			t.Errorf("check %s: %s %q, want %s with %q", check, r.Result, r.Message, want.result, want.word)
		}
	}
	if skew := time.Until(info.System.Clock); skew > -9*time.Minute || skew < -11*time.Minute {
		t.Errorf("the host's clock is %s from this machine's, want about -10m", skew)
	}

	h.host.SetUBR(681)
	h.host.SetFreeDiskGiB(40)
	h.host.SetNoAPIRoute(false)
	h.host.SetDHCP(false)
	h.host.SetPendingReboot(true)
	got = results(preflightInfo(t, h, req))
	for _, check := range []string{preflight.WindowsBuild, preflight.Disk, preflight.APIServer, preflight.Addressing} {
		if got[check].Result != plan.PreflightPass {
			t.Errorf("check %s after the fix: %+v, want pass", check, got[check])
		}
	}
	if r := got[preflight.ContainersFeature]; r.Result != plan.PreflightWarn {
		t.Errorf("containers feature with a restart pending: %+v", r)
	}
}

// TestPreflightAPIServerWrongCA: a server whose certificate the cluster CA
// did not sign fails the handshake.
func TestPreflightAPIServerWrongCA(t *testing.T) {
	h := newPreflightHost(t, winsim.Options{})
	req := apiServer(t)
	req.CAData = otherCA(t) // every httptest server has the same certificate
	r := results(preflightInfo(t, h, req))[preflight.APIServer]
	if r.Result != plan.PreflightFail || !strings.Contains(r.Message, "TLS handshake") {
		t.Errorf("api-server with another CA: %+v", r)
	}
}

// TestPreflightBadRequest: a request that is not JSON is a usage error
// naming it, not a crash.
func TestPreflightBadRequest(t *testing.T) {
	h := newPreflightHost(t, winsim.Options{})
	sess, err := h.ssh.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var stdout bytes.Buffer
	sess.Stdin, sess.Stdout = strings.NewReader("{not json"), &stdout
	if err := sess.Run(wincmd.Join(agentPath, "info", "--preflight")); err == nil {
		t.Fatal("info --preflight with a garbled request succeeded")
	}
	var doc plan.ErrorDocument
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || doc.Error.Code != plan.ErrUsage || !strings.Contains(doc.Error.Message, "pre-flight request") {
		t.Errorf("error document %s (%v)", stdout.Bytes(), err)
	}
}

// otherCA is a self-signed CA certificate (PEM) that signed nothing.
func otherCA(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
