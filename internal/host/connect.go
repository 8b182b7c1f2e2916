package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// Options says how to reach a host.
type Options struct {
	// Address is an IPv4 address or DNS name (no port).
	Address string
	// Port defaults to 22.
	Port int
	// User is the Windows account (an administrator).
	User string
	// Signer is the private key (from Secret cloud-private-key).
	Signer ssh.Signer
	// PinnedHostKey is the host key trusted before, in authorized_keys form
	// ("ssh-ed25519 AAAA..."). Empty means trust on first use: any key is
	// accepted and reported by Client.HostKey for the caller to persist.
	PinnedHostKey string
	// ExpectedFingerprint, when set and PinnedHostKey is empty, is the
	// SHA256 fingerprint ("SHA256:...") the host key must have from the
	// first connection on: pinned before first contact, not trusted on
	// first use. The host is asked for its ed25519 key first, the kind
	// Windows' OpenSSH server generates and whose fingerprint
	// `ssh-keygen -lf C:\ProgramData\ssh\ssh_host_ed25519_key.pub` prints.
	ExpectedFingerprint string
	// DialTimeout bounds the TCP connection and the SSH handshake; default
	// 30s.
	DialTimeout time.Duration
	// KeepaliveInterval is how often a keepalive is sent; a connection that
	// answers none for KeepaliveCountMax intervals is closed. Default 15s;
	// negative disables keepalives.
	KeepaliveInterval time.Duration
	// KeepaliveCountMax defaults to 3.
	KeepaliveCountMax int
	// MaxOutput bounds the stdout that Run keeps; DefaultMaxOutput when
	// zero. More is an *OutputTooLargeError, and the program's session is
	// closed at once.
	MaxOutput int
	// MinTransferRate (bytes per second) and SlowTransferGrace: an upload
	// (Sync, Install) that moves fewer than MinTransferRate bytes per second
	// over any whole SlowTransferGrace is stopped with a
	// *SlowTransferError. Zero: DefaultMinTransferRate and
	// DefaultSlowTransferGrace; a negative rate: no minimum.
	MinTransferRate   int
	SlowTransferGrace time.Duration
	// CheckDial, when set, is asked about the IP each connection really
	// goes to, after name resolution and before any packet is sent; an
	// error refuses the connection (*AddressNotAllowedError). The operator
	// passes its address policy (inventory.AddressPolicy.CheckDial).
	CheckDial func(address string, ip netip.Addr) error
}

// Client is a connection to one host. It is safe for concurrent use.
type Client struct {
	ssh       *ssh.Client
	address   string // host:port, for messages
	hostKey   ssh.PublicKey
	maxOutput int
	minRate   int
	slowGrace time.Duration

	mu   sync.Mutex
	sftp *sftp.Client // opened on first use

	closeOnce sync.Once
	done      chan struct{}
}

const (
	defaultDialTimeout       = 30 * time.Second
	defaultKeepaliveInterval = 15 * time.Second
	defaultKeepaliveCountMax = 3
)

// DefaultMaxOutput bounds a program's answer (Options.MaxOutput): 1 MiB,
// many times what the agent's info or apply prints (a few KiB), and little
// memory even for many hosts at once.
const DefaultMaxOutput = 1 << 20

// Connect dials the host, checks its host key and authenticates.
//
// The host key is checked during the key exchange, before any credential is
// sent: a key other than opts.PinnedHostKey fails with *HostKeyMismatchError.
// Other failures are *UnreachableError (dial, timeout, connection lost) or
// *AuthError (the key was refused).
func Connect(ctx context.Context, opts Options) (*Client, error) {
	h, err := newHandshake(opts)
	if err != nil {
		return nil, err
	}
	sshConn, chans, reqs, err := h.run(ctx)
	if err != nil {
		return nil, err
	}
	maxOut := opts.MaxOutput
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}
	c := &Client{
		ssh:       ssh.NewClient(sshConn, chans, reqs),
		address:   h.addr,
		hostKey:   h.presented,
		maxOutput: maxOut,
		minRate:   opts.MinTransferRate,
		slowGrace: opts.SlowTransferGrace,
		done:      make(chan struct{}),
	}
	interval := opts.KeepaliveInterval
	if interval == 0 {
		interval = defaultKeepaliveInterval
	}
	if interval > 0 {
		count := opts.KeepaliveCountMax
		if count <= 0 {
			count = defaultKeepaliveCountMax
		}
		go c.keepalive(interval, count)
	}
	go func() {
		// When the connection ends by itself (host gone, dropped), release
		// the keepalive goroutine.
		_ = c.ssh.Wait()
		c.closeDone()
	}()
	return c, nil
}

// handshake is one attempt to connect: the checked options, and what the
// host-key callback saw during the key exchange, so that the handshake's
// error, which x/crypto/ssh wraps in text, can be classified reliably.
type handshake struct {
	opts    Options
	addr    string        // host:port
	pinned  ssh.PublicKey // nil: trust on first use
	timeout time.Duration

	presented ssh.PublicKey         // the key the host presented
	mismatch  *HostKeyMismatchError // set when it is not the pinned one
}

// newHandshake checks the options: a missing key, address or user, a bad
// port or a pinned key not in authorized_keys form is an error.
func newHandshake(opts Options) (*handshake, error) {
	if opts.Signer == nil {
		return nil, errors.New("host: connect: no private key given")
	}
	if opts.Address == "" {
		return nil, errors.New("host: connect: no address given")
	}
	if opts.User == "" {
		return nil, fmt.Errorf("host %s: connect: no user name given", opts.Address)
	}
	port := opts.Port
	if port == 0 {
		port = 22
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("host %s: connect: port %d is not 1-65535", opts.Address, port)
	}
	h := &handshake{opts: opts, addr: net.JoinHostPort(opts.Address, strconv.Itoa(port)), timeout: opts.DialTimeout}
	if strings.TrimSpace(opts.PinnedHostKey) != "" {
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(opts.PinnedHostKey))
		if err != nil {
			return nil, fmt.Errorf("host %s: the pinned host key is not in authorized_keys form (\"ssh-ed25519 AAAA...\"): %v", h.addr, err)
		}
		h.pinned = k
	}
	if h.timeout <= 0 {
		h.timeout = defaultDialTimeout
	}
	return h, nil
}

// config is the SSH client configuration, checking the host key with
// checkHostKey.
func (h *handshake) config() *ssh.ClientConfig {
	config := &ssh.ClientConfig{
		User:            h.opts.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(h.opts.Signer)},
		HostKeyCallback: h.checkHostKey,
		Timeout:         h.timeout,
	}
	if h.pinned != nil {
		// A host has several host keys (RSA, ECDSA, ed25519): ask for the
		// kind that was pinned, or the server may present another one and
		// look changed when it is not.
		config.HostKeyAlgorithms = hostKeyAlgorithms(h.pinned)
	} else if h.opts.ExpectedFingerprint != "" {
		config.HostKeyAlgorithms = []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return config
}

// checkHostKey records the presented key and refuses one other than the
// pinned key, or, with nothing pinned yet, one without the expected
// fingerprint.
func (h *handshake) checkHostKey(_ string, _ net.Addr, key ssh.PublicKey) error {
	h.presented = key
	if h.pinned == nil && h.opts.ExpectedFingerprint != "" && ssh.FingerprintSHA256(key) != h.opts.ExpectedFingerprint {
		h.mismatch = &HostKeyMismatchError{
			Address:              h.addr,
			PinnedFingerprint:    h.opts.ExpectedFingerprint,
			PresentedFingerprint: ssh.FingerprintSHA256(key),
			PresentedKey:         authorizedKey(key),
		}
		return h.mismatch
	}
	if h.pinned != nil && !bytes.Equal(key.Marshal(), h.pinned.Marshal()) {
		h.mismatch = &HostKeyMismatchError{
			Address:              h.addr,
			PinnedFingerprint:    ssh.FingerprintSHA256(h.pinned),
			PresentedFingerprint: ssh.FingerprintSHA256(key),
			PresentedKey:         authorizedKey(key),
		}
		return h.mismatch
	}
	return nil
}

// checkDial is the dialer's Control hook: it sees the resolved IP of every
// connection attempt (each address a name resolves to), so the policy
// judges where packets go, not what the name looked like.
func (h *handshake) checkDial(_, address string, _ syscall.RawConn) error {
	if h.opts.CheckDial == nil {
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if err := h.opts.CheckDial(h.opts.Address, ip); err != nil {
		return &AddressNotAllowedError{Address: h.addr, Err: err}
	}
	return nil
}

// run dials the host and runs the SSH handshake, within the timeout and
// until ctx ends.
func (h *handshake) run(ctx context.Context) (ssh.Conn, <-chan ssh.NewChannel, <-chan *ssh.Request, error) {
	dialCtx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	d := net.Dialer{Control: h.checkDial}
	conn, err := d.DialContext(dialCtx, "tcp", h.addr)
	var refused *AddressNotAllowedError
	if errors.As(err, &refused) {
		return nil, nil, nil, refused
	}
	if err != nil {
		return nil, nil, nil, &UnreachableError{Address: h.addr, Err: err}
	}
	// The handshake has no context: bound it with a deadline, and close the
	// connection if ctx ends first.
	deadline, _ := dialCtx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(dialCtx, func() { _ = conn.Close() })
	sshConn, chans, reqs, err := ssh.NewClientConn(conn, h.addr, h.config())
	stopped := stop()
	if err != nil {
		_ = conn.Close()
		return nil, nil, nil, h.failure(ctx, dialCtx, stopped, err)
	}
	if !stopped {
		// ctx ended just as the handshake finished; the connection is closed.
		_ = sshConn.Close()
		return nil, nil, nil, &UnreachableError{Address: h.addr, Err: fmt.Errorf("SSH handshake: %w", context.Cause(dialCtx))}
	}
	_ = conn.SetDeadline(time.Time{})
	return sshConn, chans, reqs, nil
}

// failure classifies a failed handshake: a changed host key, a refused
// key, or an unreachable host (ctx ended, timed out, or anything else).
// stopped is false when the connection was closed because dialCtx ended.
func (h *handshake) failure(ctx, dialCtx context.Context, stopped bool, err error) error {
	var neg *ssh.AlgorithmNegotiationError
	switch {
	case h.mismatch != nil:
		return h.mismatch
	case h.pinned != nil && errors.As(err, &neg) && neg.What == "host key":
		// The host has no key of the pinned kind any more: changed too.
		return &HostKeyMismatchError{
			Address:           h.addr,
			PinnedFingerprint: ssh.FingerprintSHA256(h.pinned),
			PinnedType:        h.pinned.Type(),
			OfferedTypes:      neg.RequestedAlgorithms,
		}
	case h.presented != nil && authRefused(err):
		return &AuthError{Address: h.addr, User: h.opts.User, KeyFingerprint: ssh.FingerprintSHA256(h.opts.Signer.PublicKey()), Err: err}
	case ctx.Err() != nil:
		return &UnreachableError{Address: h.addr, Err: fmt.Errorf("SSH handshake: %w", ctx.Err())}
	case !stopped || dialCtx.Err() != nil:
		return &UnreachableError{Address: h.addr, Err: fmt.Errorf("SSH handshake did not finish within %s", h.timeout)}
	}
	return &UnreachableError{Address: h.addr, Err: err}
}

// Address is host:port, as used in error messages.
func (c *Client) Address() string { return c.address }

// HostKey is the key the host presented, in authorized_keys form (one line,
// no comment, no newline): what to persist and pass as PinnedHostKey.
func (c *Client) HostKey() string { return authorizedKey(c.hostKey) }

// HostKeyFingerprint is the SHA256 fingerprint of the presented host key.
func (c *Client) HostKeyFingerprint() string { return ssh.FingerprintSHA256(c.hostKey) }

// Close closes the SFTP session, if any, and the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.sftp != nil {
		_ = c.sftp.Close()
		c.sftp = nil
	}
	c.mu.Unlock()
	c.closeDone()
	err := c.ssh.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (c *Client) closeDone() { c.closeOnce.Do(func() { close(c.done) }) }

// keepalive sends keepalive@openssh.com requests (as OpenSSH's
// ServerAliveInterval does) and closes the connection when the host stops
// answering, so that a hung link turns into an error instead of a hang.
func (c *Client) keepalive(interval time.Duration, countMax int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	answered := make(chan error, 1)
	pending, missed := false, 0
	for {
		select {
		case <-c.done:
			return
		case err := <-answered:
			pending = false
			if err != nil {
				_ = c.ssh.Close()
				return
			}
			missed = 0
		case <-t.C:
			if pending {
				missed++
				if missed >= countMax {
					_ = c.ssh.Close()
					return
				}
				continue
			}
			pending = true
			go func() {
				_, _, err := c.ssh.SendRequest("keepalive@openssh.com", true, nil)
				answered <- err
			}()
		}
	}
}

// authorizedKey is the authorized_keys form without the trailing newline.
func authorizedKey(k ssh.PublicKey) string {
	if k == nil {
		return ""
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

// hostKeyAlgorithms lists the algorithms that make a server present a key of
// the pinned key's type.
func hostKeyAlgorithms(k ssh.PublicKey) []string {
	if k.Type() == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{k.Type()}
}

// authRefused recognizes x/crypto/ssh's client-side authentication failure
// (it has no error type for it), and OpenSSH's disconnect after too many
// refused keys.
func authRefused(err error) bool {
	s := err.Error()
	return strings.Contains(s, "unable to authenticate") || strings.Contains(s, "Too many authentication failures")
}
