package standin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
)

// File names inside --cert-dir, as the kubelet names them.
const (
	clientCertFile = "kubelet-client-current.pem"
	clientKeyTemp  = "kubelet-client.key.tmp"
	serverCertFile = "kubelet-server-current.pem"
	serverKeyTemp  = "kubelet-server.key.tmp"
)

// loadKubeconfig reads a kubeconfig whose file references (CA, client
// certificate and key, token file) may be Windows paths on the simulated
// host.
func loadKubeconfig(file string) (*rest.Config, error) {
	p, err := hostPath(file)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", file, err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", file, err)
	}
	mapPath := func(ref *string) error {
		if *ref == "" {
			return nil
		}
		m, err := hostPath(*ref)
		if err != nil {
			return fmt.Errorf("kubeconfig %s: %w", file, err)
		}
		if !filepath.IsAbs(m) {
			m = filepath.Join(filepath.Dir(p), m)
		}
		*ref = m
		return nil
	}
	for _, c := range cfg.Clusters {
		if err := mapPath(&c.CertificateAuthority); err != nil {
			return nil, err
		}
	}
	for _, a := range cfg.AuthInfos {
		for _, ref := range []*string{&a.ClientCertificate, &a.ClientKey, &a.TokenFile} {
			if err := mapPath(ref); err != nil {
				return nil, err
			}
		}
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", file, err)
	}
	return rc, nil
}

// ensureClientCredentials makes sure --kubeconfig holds a valid client
// certificate: reused when present (after a restart), else obtained by the
// TLS bootstrap with --bootstrap-kubeconfig.
func (k *kubelet) ensureClientCredentials(ctx context.Context) error {
	if k.flags.kubeconfig == "" {
		return errors.New("--kubeconfig is required: the simulated kubelet does not run in standalone mode")
	}
	if rc, err := loadKubeconfig(k.flags.kubeconfig); err == nil {
		if err := validClientCert(rc); err == nil {
			k.log.Infof("using the client credentials in %s", k.flags.kubeconfig)
			return k.useConfig(rc)
		} else {
			k.log.Warningf("kubeconfig %s cannot be used (%v); bootstrapping", k.flags.kubeconfig, err)
		}
	}
	if k.flags.bootstrapKubeconfig == "" {
		return fmt.Errorf("no usable client credentials in %s and no --bootstrap-kubeconfig to get them", k.flags.kubeconfig)
	}
	if bootCfg, err := loadKubeconfig(k.flags.bootstrapKubeconfig); err == nil {
		if err := k.checkClock(ctx, bootCfg); err != nil {
			return err
		}
	}
	if err := k.bootstrap(ctx); err != nil {
		return err
	}
	rc, err := loadKubeconfig(k.flags.kubeconfig)
	if err != nil {
		return err
	}
	return k.useConfig(rc)
}

func (k *kubelet) useConfig(rc *rest.Config) error {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = fmt.Sprintf("kubelet/%s (windows/amd64) winsim-simulated", k.version)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	k.restConfig, k.client = rc, client
	return nil
}

// validClientCert checks that the config's client certificate can be read
// and has not expired.
func validClientCert(rc *rest.Config) error {
	data := rc.CertData
	if len(data) == 0 && rc.CertFile != "" {
		var err error
		if data, err = os.ReadFile(rc.CertFile); err != nil {
			return err
		}
	}
	if len(data) == 0 {
		return errors.New("no client certificate")
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		return err
	}
	if time.Now().After(certs[0].NotAfter) {
		return fmt.Errorf("client certificate expired at %s", certs[0].NotAfter)
	}
	return nil
}

// bootstrap is the kubelet's TLS bootstrap: a CSR for
// system:node:<name> signed by kubernetes.io/kube-apiserver-client-kubelet,
// made with the bootstrap credentials; once approved and signed, the
// certificate and key go to --cert-dir and a kubeconfig using them to
// --kubeconfig.
func (k *kubelet) bootstrap(ctx context.Context) error {
	bootCfg, err := loadKubeconfig(k.flags.bootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(bootCfg)
	if err != nil {
		return err
	}
	certDir, err := hostPath(k.flags.certDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return fmt.Errorf("--cert-dir %s: %w", k.flags.certDir, err)
	}
	// The key survives a restart during the wait, so the same CSR is found
	// again, as the kubelet does with kubelet-client.key.tmp.
	key, keyPEM, err := loadOrCreateKey(filepath.Join(certDir, clientKeyTemp))
	if err != nil {
		return err
	}
	subject := &pkix.Name{CommonName: "system:node:" + k.nodeName, Organization: []string{"system:nodes"}}
	csrPEM, err := certutil.MakeCSR(key, subject, nil, nil)
	if err != nil {
		return err
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	name, err := digestedName(key, subject, usages)
	if err != nil {
		return err
	}
	reqName, reqUID, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, name, certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
	if err != nil {
		return fmt.Errorf("requesting the client certificate: %w", err)
	}
	k.log.Infof("waiting for client certificate signing request %s to be approved and signed", reqName)
	certPEM, err := csr.WaitForCertificate(ctx, client, reqName, reqUID)
	if err != nil {
		return fmt.Errorf("waiting for certificate signing request %s: %w", reqName, err)
	}
	certFile := filepath.Join(certDir, clientCertFile)
	if err := writeFileAtomic(certFile, append(append([]byte{}, certPEM...), keyPEM...), 0o600); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(certDir, clientKeyTemp))
	k.log.Infof("client certificate signed; written to %s", windowsForm(joinWindows(k.flags.certDir, clientCertFile)))

	// The kubeconfig: the bootstrap kubeconfig's server and CA, the new
	// certificate and key (Windows paths, as the kubelet writes them).
	ca := bootCfg.CAData
	if len(ca) == 0 && bootCfg.CAFile != "" {
		if ca, err = os.ReadFile(bootCfg.CAFile); err != nil {
			return fmt.Errorf("reading the bootstrap kubeconfig's CA: %w", err)
		}
	}
	certRef := windowsForm(joinWindows(k.flags.certDir, clientCertFile))
	kc := clientcmdapi.NewConfig()
	kc.Clusters["default-cluster"] = &clientcmdapi.Cluster{Server: bootCfg.Host, CertificateAuthorityData: ca, TLSServerName: bootCfg.ServerName}
	kc.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{ClientCertificate: certRef, ClientKey: certRef}
	kc.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}
	kc.CurrentContext = "default-context"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	kcPath, err := hostPath(k.flags.kubeconfig)
	if err != nil {
		return err
	}
	return writeFileAtomic(kcPath, data, 0o600)
}

// joinWindows joins a folder given on the command line and a file name with
// the folder's own separator.
func joinWindows(dir, name string) string {
	sep := "/"
	if len(dir) > 1 && dir[1] == ':' || len(dir) > 0 && dir[0] == '\\' {
		sep = `\`
	}
	if len(dir) > 0 && (dir[len(dir)-1] == '/' || dir[len(dir)-1] == '\\') {
		return dir + name
	}
	return dir + sep + name
}

func loadOrCreateKey(file string) (*ecdsa.PrivateKey, []byte, error) {
	if data, err := os.ReadFile(file); err == nil {
		if key, err := keyutil.ParsePrivateKeyPEM(data); err == nil {
			if ec, ok := key.(*ecdsa.PrivateKey); ok {
				return ec, data, nil
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: keyutil.ECPrivateKeyBlockType, Bytes: der})
	if err := writeFileAtomic(file, data, 0o600); err != nil {
		return nil, nil, err
	}
	return key, data, nil
}

// digestedName names the CSR after its key, subject and usages
// ("node-csr-..."), as the kubelet does, so that a restart finds its
// pending request.
func digestedName(key *ecdsa.PrivateKey, subject *pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", err
	}
	h := sha512.New512_256()
	h.Write(pub)
	fmt.Fprintf(h, "|%s|%v|", subject.CommonName, subject.Organization)
	for _, u := range usages {
		fmt.Fprintf(h, "%s|", u)
	}
	return "node-csr-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}

func writeFileAtomic(file string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".writing"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// checkClock copies what a kubelet whose clock is off meets: it is a Go
// program, and Go's TLS client verifies the API server's certificate at
// the local time, so a clock behind the certificate's NotBefore (or past
// its NotAfter) fails every request with "x509: certificate has expired or
// is not yet valid: current time ... is before ...", the TLS bootstrap
// first. The simulated host's clock is this machine's moved by its offset
// (winsim --clock-offset), which the process's own clock does not follow,
// so the handshake is made here at the host's time. No offset: nothing to
// do.
func (k *kubelet) checkClock(ctx context.Context, rc *rest.Config) error {
	if k.host.ClockOffset == 0 {
		return nil
	}
	u, err := url.Parse(rc.Host)
	if err != nil {
		return fmt.Errorf("server %q: %w", rc.Host, err)
	}
	ca := rc.CAData
	if len(ca) == 0 && rc.CAFile != "" {
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			return err
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	port := u.Port()
	if port == "" {
		port = "443"
	}
	hostNow := func() time.Time { return time.Now().Add(k.host.ClockOffset) }
	d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: cmpOr(rc.ServerName, u.Hostname()), Time: hostNow}}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		k.log.Errorf("simulated clock %s off: the API server's certificate does not verify at the host's time", k.host.ClockOffset)
		return fmt.Errorf("requesting the client certificate: Post %q: %w", rc.Host+"/apis/certificates.k8s.io/v1/certificatesigningrequests", err)
	}
	return conn.Close()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
