package host

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

func connect(t *testing.T, opts Options) *Client {
	t.Helper()
	c, err := Connect(context.Background(), opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestTrustOnFirstUseThenPinned(t *testing.T) {
	h := newSimHost(t)
	c := connect(t, h.options())
	want := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.HostKey())))
	if c.HostKey() != want {
		t.Fatalf("first use: HostKey() = %q, want the host's key %q", c.HostKey(), want)
	}
	if c.HostKeyFingerprint() != h.Fingerprint() {
		t.Errorf("HostKeyFingerprint() = %s, want %s", c.HostKeyFingerprint(), h.Fingerprint())
	}
	c.Close()

	opts := h.options()
	opts.PinnedHostKey = c.HostKey() + " a comment\n"
	c = connect(t, opts)
	if c.HostKey() != want {
		t.Errorf("pinned: HostKey() = %q, want %q", c.HostKey(), want)
	}
	if _, _, code, err := c.Run(context.Background(), []string{`C:\k\missing.exe`}, nil); err != nil || code == 0 {
		t.Errorf("the pinned connection does not run programs: code %d, %v", code, err)
	}
}

// countingSigner counts every use of the private key.
type countingSigner struct {
	ssh.Signer
	uses atomic.Int32
}

func (s *countingSigner) PublicKey() ssh.PublicKey { s.uses.Add(1); return s.Signer.PublicKey() }
func (s *countingSigner) Sign(r io.Reader, data []byte) (*ssh.Signature, error) {
	s.uses.Add(1)
	return s.Signer.Sign(r, data)
}

func TestHostKeyChanged(t *testing.T) {
	h := newSimHost(t)
	first := connect(t, h.options())
	pinned := first.HostKey()
	first.Close()

	newKey, err := h.RotateHostKey()
	if err != nil {
		t.Fatalf("RotateHostKey: %v", err)
	}
	signer := &countingSigner{Signer: h.signer}
	opts := h.options()
	opts.Signer = signer
	opts.PinnedHostKey = pinned
	c, err := Connect(context.Background(), opts)
	var mm *HostKeyMismatchError
	if !errors.As(err, &mm) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Connect with the old key pinned: %v, want *HostKeyMismatchError", err)
	}
	oldKey, _, _, _, _ := ssh.ParseAuthorizedKey([]byte(pinned))
	if mm.PinnedFingerprint != ssh.FingerprintSHA256(oldKey) || mm.PresentedFingerprint != ssh.FingerprintSHA256(newKey) {
		t.Errorf("mismatch fingerprints pinned=%s presented=%s, want %s and %s", mm.PinnedFingerprint, mm.PresentedFingerprint, ssh.FingerprintSHA256(oldKey), ssh.FingerprintSHA256(newKey))
	}
	if mm.PresentedKey != strings.TrimSpace(string(ssh.MarshalAuthorizedKey(newKey))) {
		t.Errorf("PresentedKey = %q", mm.PresentedKey)
	}
	if !strings.Contains(err.Error(), h.IP()) {
		t.Errorf("error %q does not name the host", err)
	}
	if n := signer.uses.Load(); n != 0 {
		t.Errorf("the private key was used %d times: authentication must not start with a changed host key", n)
	}

	// Pinning the new key works again.
	opts.PinnedHostKey = mm.PresentedKey
	connect(t, opts)
}

func TestHostKeyAcrossRestartAndReinstall(t *testing.T) {
	stateDir := t.TempDir()
	a := newSimHost(t, winsim.Options{StateDir: stateDir})
	pinned := connect(t, a.options()).HostKey()
	ip, port := a.IP(), a.Port()
	a.Close()

	// The same host started again keeps its key.
	b := newSimHost(t, winsim.Options{StateDir: stateDir})
	opts := b.options()
	opts.PinnedHostKey = pinned
	connect(t, opts)
	b.Close()

	// A host reinstalled at the same address: a new state folder, a new
	// host key.
	c := newSimHost(t, winsim.Options{StateDir: t.TempDir(), IP: ip, Port: port})
	opts = c.options()
	opts.PinnedHostKey = pinned
	_, err := Connect(context.Background(), opts)
	var mm *HostKeyMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("Connect to the reinstalled host: %v, want *HostKeyMismatchError", err)
	}
}

func TestWrongPrivateKey(t *testing.T) {
	h := newSimHost(t)
	opts := h.options()
	opts.Signer = newSigner(t)
	c, err := Connect(context.Background(), opts)
	var ae *AuthError
	if !errors.As(err, &ae) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Connect with a key the host does not know: %v, want *AuthError", err)
	}
	if ae.KeyFingerprint != ssh.FingerprintSHA256(opts.Signer.PublicKey()) || ae.User != h.User() {
		t.Errorf("AuthError = %+v", ae)
	}
	var ue *UnreachableError
	if errors.As(err, &ue) {
		t.Errorf("an auth failure is also an *UnreachableError")
	}

	opts = h.options()
	opts.User = "Guest"
	if _, err := Connect(context.Background(), opts); !errors.As(err, &ae) {
		t.Errorf("Connect as another user: %v, want *AuthError", err)
	}
}

func TestHostDown(t *testing.T) {
	h := newSimHost(t)
	opts := h.options()
	h.Close()
	_, err := Connect(context.Background(), opts)
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("Connect to a stopped host: %v, want *UnreachableError", err)
	}
	if !strings.Contains(err.Error(), net.JoinHostPort(opts.Address, strconv.Itoa(opts.Port))) {
		t.Errorf("error %q does not name the host", err)
	}
}

func TestHostSilent(t *testing.T) {
	// Accepts TCP connections and never speaks SSH: the handshake times out.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	addr := ln.Addr().(*net.TCPAddr)
	_, err = Connect(context.Background(), Options{Address: "127.0.0.1", Port: addr.Port, User: "Administrator", Signer: newSigner(t), DialTimeout: 300 * time.Millisecond})
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("Connect to a silent port: %v, want *UnreachableError", err)
	}

	// The caller's context ends the handshake too.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = Connect(ctx, Options{Address: "127.0.0.1", Port: addr.Port, User: "Administrator", Signer: newSigner(t), DialTimeout: time.Hour})
	if !errors.As(err, &ue) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Connect with a cancelled context: %v, want *UnreachableError wrapping context.Canceled", err)
	}
}

func TestConnectRefusesBadOptions(t *testing.T) {
	signer := newSigner(t)
	for name, opts := range map[string]Options{
		"no key":         {Address: "127.0.0.1", User: "u"},
		"no address":     {User: "u", Signer: signer},
		"no user":        {Address: "127.0.0.1", Signer: signer},
		"bad port":       {Address: "127.0.0.1", User: "u", Signer: signer, Port: 70000},
		"bad pinned key": {Address: "127.0.0.1", User: "u", Signer: signer, PinnedHostKey: "ssh-ed25519 notbase64"},
	} {
		if c, err := Connect(context.Background(), opts); err == nil {
			c.Close()
			t.Errorf("%s: Connect succeeded", name)
		}
	}
}

func TestPinnedKeyTypeGone(t *testing.T) {
	// An RSA key is pinned; the (simulated) host only has an ed25519 key.
	h := newSimHost(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := ssh.NewPublicKey(&key.PublicKey)
	opts := h.options()
	opts.PinnedHostKey = string(ssh.MarshalAuthorizedKey(pub))
	_, err = Connect(context.Background(), opts)
	var mm *HostKeyMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("Connect: %v, want *HostKeyMismatchError", err)
	}
	if mm.PinnedType != ssh.KeyAlgoRSA || mm.PresentedFingerprint != "" || !strings.Contains(err.Error(), ssh.KeyAlgoED25519) {
		t.Errorf("mismatch = %+v (%v)", mm, err)
	}
}

func TestHostKeyAlgorithms(t *testing.T) {
	ed := newSigner(t).PublicKey()
	if got := hostKeyAlgorithms(ed); len(got) != 1 || got[0] != ssh.KeyAlgoED25519 {
		t.Errorf("ed25519: %v, want [%s]", got, ssh.KeyAlgoED25519)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := hostKeyAlgorithms(pub); len(got) != 3 || got[0] != ssh.KeyAlgoRSASHA512 {
		t.Errorf("rsa: %v, want the SHA-2 algorithms first", got)
	}
}

func TestKeepaliveClosesHungConnection(t *testing.T) {
	h := newSimHost(t)
	h.installFakeAgent(t)
	opts := h.options()
	opts.KeepaliveInterval = 100 * time.Millisecond
	opts.KeepaliveCountMax = 2
	c := connect(t, opts)

	// The program runs for a minute; once it has started, the link hangs
	// (every packet the host reads is held for 5s), so keepalives go
	// unanswered and the client must give up on its own.
	done := make(chan error, 1)
	execs := h.Counters().Execs
	go func() {
		_, _, _, err := c.Run(context.Background(), []string{fakeAgentPath, "sleep"}, nil)
		done <- err
	}()
	testkit.Eventually(t, 30*time.Second, "the host running the program", func() (bool, string) {
		n := h.Counters().Execs - execs
		return n > 0, fmt.Sprintf("%d programs run", n)
	})
	h.SetLink(winsim.LinkOptions{Latency: 5 * time.Second})
	defer h.SetLink(winsim.LinkOptions{})
	select {
	case err := <-done:
		var ue *UnreachableError
		if !errors.As(err, &ue) {
			t.Fatalf("Run over a hung link: %v, want *UnreachableError", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run over a hung link did not return within 30s: keepalives did not close the connection")
	}
}

// TestCheckDialSeesWhereTheConnectionGoes: the dial check is asked about the
// IP a connection really goes to, after name resolution, and its refusal
// is an *AddressNotAllowedError (not Unreachable): the policy judges where
// packets go, so a DNS name cannot lead where an address may not.
func TestCheckDialSeesWhereTheConnectionGoes(t *testing.T) {
	h := newSimHost(t)
	opts := h.options()
	var seen []string
	opts.CheckDial = func(address string, ip netip.Addr) error {
		seen = append(seen, address+"->"+ip.String())
		return errors.New("not this one")
	}
	_, err := Connect(context.Background(), opts)
	var refused *AddressNotAllowedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "not this one") {
		t.Fatalf("Connect with a refusing check: %v, want an *AddressNotAllowedError", err)
	}
	if want := h.IP() + "->" + h.IP(); len(seen) == 0 || seen[0] != want {
		t.Errorf("the check saw %v, want %s", seen, want)
	}

	// A name: the check is given the name and the address it resolved to.
	seen = nil
	opts.Address = "localhost"
	if _, err := Connect(context.Background(), opts); !errors.As(err, &refused) {
		t.Fatalf("Connect to localhost: %v, want an *AddressNotAllowedError", err)
	}
	if len(seen) == 0 || !strings.HasPrefix(seen[0], "localhost->") || seen[0] == "localhost->localhost" {
		t.Errorf("the check saw %v, want localhost and a resolved IP", seen)
	}

	// Allowed: the connection is made.
	opts = h.options()
	opts.CheckDial = func(string, netip.Addr) error { return nil }
	connect(t, opts)
}
