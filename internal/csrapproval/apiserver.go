package csrapproval

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// APIServerCertificate reads the names and addresses of the API server's
// serving certificate: no node may be named after one of them, and no
// node's serving certificate may carry one (a node holding a certificate
// for the API server's name could pose as the API server to whoever
// connects by that name). It reads them by a TLS handshake with the API
// server the client talks to, as any client sees them, and keeps them for
// TTL (the certificate is rotated now and then). Safe for concurrent use.
type APIServerCertificate struct {
	Config *rest.Config
	// TTL is how long names read are kept (default 10 minutes).
	TTL time.Duration

	mu    sync.Mutex
	names []string
	ips   []netip.Addr
	at    time.Time
}

// Names returns the certificate's DNS names.
func (a *APIServerCertificate) Names(ctx context.Context) ([]string, error) {
	names, _, err := a.Read(ctx)
	return names, err
}

// Read returns the certificate's DNS names and IP addresses.
func (a *APIServerCertificate) Read(ctx context.Context) ([]string, []netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ttl := a.TTL
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	if !a.at.IsZero() && time.Since(a.at) < ttl {
		return a.names, a.ips, nil
	}
	names, ips, err := readServingCertificate(ctx, a.Config)
	if err != nil {
		return nil, nil, err
	}
	a.names, a.ips, a.at = names, ips, time.Now()
	return names, ips, nil
}

// readServingCertificate does a TLS handshake with cfg's API server and
// returns the names and addresses of the certificate it presents.
func readServingCertificate(ctx context.Context, cfg *rest.Config) ([]string, []netip.Addr, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" {
		return nil, nil, fmt.Errorf("the API server's address %q is not a URL", cfg.Host)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("the TLS configuration of the API server %s: %w", cfg.Host, err)
	}
	if tlsCfg == nil {
		return nil, nil, fmt.Errorf("the API server %s is not served over TLS", cfg.Host)
	}
	if tlsCfg.ServerName == "" {
		tlsCfg.ServerName = u.Hostname()
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := (&tls.Dialer{Config: tlsCfg}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the API server's serving certificate from %s: %w", addr, err)
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, nil, fmt.Errorf("the API server %s presented no certificate", addr)
	}
	var ips []netip.Addr
	for _, ip := range certs[0].IPAddresses {
		if a, ok := netip.AddrFromSlice(ip); ok {
			ips = append(ips, a.Unmap())
		}
	}
	return certs[0].DNSNames, ips, nil
}
