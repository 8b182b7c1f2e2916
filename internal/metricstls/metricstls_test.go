package metricstls

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

// t0 is now: NewCA signs its certificate from the clock (client-go's
// NewSelfSignedCACert), so a fixed date would make every chain check fail
// once the clock passes it.
var t0 = time.Now().UTC().Truncate(time.Second)

// A certificate Issue makes verifies against the CA for the node's name
// and address, as a scraper checks it, and is good for server auth only.
func TestIssueVerifies(t *testing.T) {
	ca, keyPEM, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseCA(ca.CertPEM, keyPEM); err != nil {
		t.Fatalf("the CA does not read back: %v", err)
	}
	certPEM, servingKey, err := ca.Issue("win-a", net.ParseIP("10.0.0.5"), t0)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, servingKey)
	if err != nil {
		t.Fatalf("certificate and key are no pair: %v", err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, name := range []string{"win-a", "10.0.0.5"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: t0.Add(time.Hour)}); err != nil {
			t.Errorf("verifying for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "10.0.0.6", Roots: pool, CurrentTime: t0.Add(time.Hour)}); err == nil {
		t.Error("verifies for another address")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: t0.Add(time.Hour), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("good for client auth")
	}
	if _, _, err := ca.Issue("", net.ParseIP("10.0.0.5"), t0); err == nil {
		t.Error("issued for no node name")
	}
}

// ParseCA refuses a Secret that is not a usable CA, saying which part.
func TestParseCARefuses(t *testing.T) {
	ca, keyPEM, _ := NewCA()
	other, otherKey, _ := NewCA()
	leaf, leafKey, _ := ca.Issue("win-a", net.ParseIP("10.0.0.5"), t0)
	for name, tc := range map[string]struct {
		cert, key []byte
		want      string
	}{
		"garbled cert": {[]byte("not PEM"), keyPEM, "tls.crt"},
		"garbled key":  {ca.CertPEM, []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), "tls.key"},
		"other key":    {ca.CertPEM, otherKey, "tls.key is not the key of tls.crt"},
		"not a CA":     {leaf, leafKey, "not a CA certificate"},
	} {
		if _, err := ParseCA(tc.cert, tc.key); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	_ = other
}

func TestNeedsRenewal(t *testing.T) {
	ca, _, _ := NewCA()
	other, _, _ := NewCA()
	ip := net.ParseIP("10.0.0.5")
	good, _, _ := ca.Issue("win-a", ip, t0)
	foreign, _, _ := other.Issue("win-a", ip, t0)
	for name, tc := range map[string]struct {
		cert  []byte
		node  string
		ip    string
		now   time.Time
		renew bool
		why   string
	}{
		"fresh":               {good, "win-a", "10.0.0.5", t0.Add(time.Hour), false, ""},
		"two thirds left":     {good, "win-a", "10.0.0.5", t0.Add(ServingValidity / 2), false, ""},
		"less than a third":   {good, "win-a", "10.0.0.5", t0.Add(ServingValidity * 7 / 10), true, "expires"},
		"expired":             {good, "win-a", "10.0.0.5", t0.Add(ServingValidity + time.Hour), true, "expires"},
		"another CA":          {foreign, "win-a", "10.0.0.5", t0.Add(time.Hour), true, "not signed by the current"},
		"node renamed":        {good, "win-b", "10.0.0.5", t0.Add(time.Hour), true, "the node is win-b"},
		"address moved":       {good, "win-a", "10.0.0.9", t0.Add(time.Hour), true, "10.0.0.9"},
		"not valid yet":       {good, "win-a", "10.0.0.5", t0.Add(-time.Hour), true, "not valid yet"},
		"garbled certificate": {[]byte("garbage"), "win-a", "10.0.0.5", t0, true, "no readable certificate"},
	} {
		renew, why := NeedsRenewal(tc.cert, ca.Cert, tc.node, net.ParseIP(tc.ip), tc.now)
		if renew != tc.renew || !strings.Contains(why, tc.why) {
			t.Errorf("%s: renew %t (%q), want %t (%q)", name, renew, why, tc.renew, tc.why)
		}
	}
}

// FuzzNeedsRenewal: whatever a Secret holds, the decision is made without
// a panic, and anything unreadable is renewed.
func FuzzNeedsRenewal(f *testing.F) {
	ca, _, _ := NewCA()
	good, _, _ := ca.Issue("win-a", net.ParseIP("10.0.0.5"), t0)
	f.Add(good)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		renew, why := NeedsRenewal(data, ca.Cert, "win-a", net.ParseIP("10.0.0.5"), t0.Add(time.Hour))
		if renew && why == "" {
			t.Error("renewal without a reason")
		}
	})
}

// CheckServingPair accepts the service CA's Secret only when its
// certificate names the Service and its key is that certificate's; each
// refusal names what is wrong.
func TestCheckServingPair(t *testing.T) {
	ca, _, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	name := ServiceServerName("windows-exporter", "winnode-system")
	cert, key, err := ca.Issue(name, net.ParseIP("10.0.0.5"), t0)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := ca.Issue(name, net.ParseIP("10.0.0.5"), t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what      string
		cert, key []byte
		name      string
		want      string
	}{
		{"the service's pair, CA appended", append(append([]byte{}, cert...), ca.CertPEM...), key, name, ""},
		{"another service's name", cert, key, "other.winnode-system.svc", "names [" + name + "], not other.winnode-system.svc"},
		{"another key", cert, otherKey, name, "tls.key is not the key of tls.crt"},
		{"a garbled certificate", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), key, name, "tls.crt:"},
		{"no certificate", nil, key, name, "tls.crt:"},
		{"a garbled key", cert, []byte("not a key"), name, "tls.key:"},
	} {
		err := CheckServingPair(tc.cert, tc.key, tc.name)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.what, err, tc.want)
		}
	}
}
