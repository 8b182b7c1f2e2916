package winsim

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/testkit"
)

func TestDropConnections(t *testing.T) {
	th := newTestHost(t, Options{})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	c := th.dial(t)
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start(`C:\k\helper.exe cat`); err != nil {
		t.Fatal(err)
	}
	th.DropConnections()
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("session ended cleanly; want it cut off")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("session still open 20s after DropConnections")
	}
	if _, _, code := run(t, th.dial(t), `C:\k\helper.exe json`, ""); code != 0 {
		t.Errorf("new connection after the drop: exit %d", code)
	}
}

func TestRotateHostKeyAndPersistence(t *testing.T) {
	dir := t.TempDir()
	th := newTestHost(t, Options{StateDir: dir, Hostname: "WIN-PERSIST"})
	old := th.HostKey()
	addr := th.Addr()
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
	// The same state folder gives the same host.
	h2, err := New(Options{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Start(); err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if h2.Hostname() != "WIN-PERSIST" || h2.Fingerprint() != ssh.FingerprintSHA256(old) || h2.Addr() != addr {
		t.Errorf("after a restart: %s %s %s, want %s %s %s", h2.Hostname(), h2.Fingerprint(), h2.Addr(), "WIN-PERSIST", ssh.FingerprintSHA256(old), addr)
	}
	newKey, err := h2.RotateHostKey()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(newKey.Marshal(), old.Marshal()) {
		t.Fatal("RotateHostKey kept the key")
	}
	_, err = ssh.Dial("tcp", h2.Addr(), &ssh.ClientConfig{
		User: "Administrator", Auth: []ssh.AuthMethod{ssh.PublicKeys(th.signer)},
		HostKeyCallback: ssh.FixedHostKey(old), Timeout: 10 * time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "host key mismatch") {
		t.Errorf("dial pinned to the old key: %v, want a host key mismatch", err)
	}
	c, err := ssh.Dial("tcp", h2.Addr(), &ssh.ClientConfig{
		User: "Administrator", Auth: []ssh.AuthMethod{ssh.PublicKeys(th.signer)},
		HostKeyCallback: ssh.FixedHostKey(newKey), Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("dial with the new key: %v", err)
	}
	c.Close()
}

func TestLinkShaping(t *testing.T) {
	th := newTestHost(t, Options{})
	// A latency far longer than any test keeps the handshake from finishing
	// until the fault is lifted.
	th.SetLink(LinkOptions{Latency: time.Hour})
	dialed := make(chan error, 1)
	go func() {
		c, err := ssh.Dial("tcp", th.Addr(), &ssh.ClientConfig{
			User: "Administrator", Auth: []ssh.AuthMethod{ssh.PublicKeys(th.signer)},
			HostKeyCallback: ssh.FixedHostKey(th.HostKey()), Timeout: time.Minute,
		})
		if err == nil {
			c.Close()
		}
		dialed <- err
	}()
	// The link holds the handshake's first bytes: it cannot have finished.
	testkit.Eventually(t, 20*time.Second, "the link holding the handshake's bytes", func() (bool, string) {
		n := th.link.holding()
		return n > 0, fmt.Sprintf("%d bytes held", n)
	})
	select {
	case err := <-dialed:
		t.Fatalf("the handshake finished through an hour of latency: %v", err)
	default:
	}
	th.SetLink(LinkOptions{})
	select {
	case err := <-dialed:
		if err != nil {
			t.Fatalf("dial after lifting the latency: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("dial still blocked 20s after lifting the latency")
	}

	// Under a bandwidth limit, every byte goes through the limiter and
	// arrives intact.
	th.SetLink(LinkOptions{BytesPerSecond: 4 << 20})
	sc, err := sftp.NewClient(th.dial(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	payload := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	f, err := sc.Create("/C:/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(payload); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f, _ = sc.Open("/C:/big.bin")
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("round trip under a bandwidth limit: %d bytes, %v", len(got), err)
	}
	th.link.mu.Lock()
	shaped := th.link.shaped
	th.link.mu.Unlock()
	if shaped < int64(2*len(payload)) {
		t.Errorf("the limiter saw %d bytes, want at least %d (upload and download)", shaped, 2*len(payload))
	}
}

func TestTenHostsSideBySide(t *testing.T) {
	f, err := StartFleet(10, Options{StateDir: t.TempDir(), BootDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("StartFleet: %v", err)
	}
	defer f.Close()
	addrs, names := map[string]bool{}, map[string]bool{}
	for i, h := range f.Hosts {
		if addrs[h.Addr()] || names[h.Hostname()] {
			t.Errorf("host %d repeats an address or name: %s %s", i, h.Addr(), h.Hostname())
		}
		addrs[h.Addr()], names[h.Hostname()] = true, true
		if !strings.HasPrefix(h.IP(), "127.0.") {
			t.Errorf("host %d has address %s, want 127.0.0.N", i, h.IP())
		}
	}
	// Each host answers with its own identity.
	for i, h := range f.Hosts {
		th := &testHost{Host: h}
		th.signer = newSigner(t)
		if err := h.AuthorizeKey(th.signer.PublicKey()); err != nil {
			t.Fatal(err)
		}
		installHelper(t, h, `C:\k\helper.exe`)
		out, errOut, code := run(t, th.dial(t), `C:\k\helper.exe json`, "")
		if code != 0 || !strings.Contains(out, fmt.Sprintf(`"computername":%q`, h.Hostname())) {
			t.Errorf("host %d (%s): exit %d stdout %q stderr %q", i, h.Addr(), code, out, errOut)
		}
	}
}

func TestPowerOffAndOn(t *testing.T) {
	th := newTestHost(t, Options{})
	th.PowerOff()
	if th.Up() {
		t.Error("Up after PowerOff")
	}
	if c, err := ssh.Dial("tcp", th.Addr(), &ssh.ClientConfig{
		User: "Administrator", Auth: []ssh.AuthMethod{ssh.PublicKeys(th.signer)},
		HostKeyCallback: ssh.FixedHostKey(th.HostKey()), Timeout: 5 * time.Second,
	}); err == nil {
		c.Close()
		t.Fatal("a powered-off host accepted SSH")
	}
	if err := th.PowerOn(); err != nil {
		t.Fatal(err)
	}
	th.dial(t).Close()
}

// A program that ignores its input still ends when its connection drops.
func TestDroppedConnectionEndsProgram(t *testing.T) {
	th := newTestHost(t, Options{})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	c := th.dial(t)
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start(`C:\k\helper.exe serve bg`); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 64)
	n, _ := out.Read(line)
	var pid int
	if _, err := fmt.Sscanf(string(line[:n]), "bg started %d", &pid); err != nil {
		t.Fatalf("helper's first line %q: %v", line[:n], err)
	}
	c.Close() // the client goes away without a word
	testkit.Eventually(t, 20*time.Second, fmt.Sprintf("process %d to end after its SSH connection closed", pid), func() (bool, string) {
		if syscall.Kill(pid, 0) == nil {
			return false, "it still runs"
		}
		return true, ""
	})
}

func TestFleetTakesBuildsInTurn(t *testing.T) {
	f, err := StartFleet(3, Options{StateDir: t.TempDir(), Builds: []string{"2019", "2022"}})
	if err != nil {
		t.Fatalf("StartFleet: %v", err)
	}
	defer f.Close()
	for i, want := range []string{"10.0.17763", "10.0.20348", "10.0.17763"} {
		if got := f.Hosts[i].Build(); got != want {
			t.Errorf("host %d runs build %s, want %s", i+1, got, want)
		}
	}
	if _, err := New(Options{StateDir: t.TempDir(), Builds: []string{"2022"}}); err == nil {
		t.Error("New accepted Options.Builds, which only a fleet can take in turn")
	}
}
