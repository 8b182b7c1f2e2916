package winsim

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func TestExecOverGoClient(t *testing.T) {
	th := newTestHost(t, Options{Hostname: "WIN-EXEC", Build: "2022"})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	c := th.dial(t)

	out, errOut, code := run(t, c, `C:\K\Helper.exe json a "b c" "C:\Program Files\x" "quote\"d"`, "")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got struct {
		Args           []string
		Root, SCM, CWD string
		Computername   string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not the helper's JSON: %v: %q", err, out)
	}
	want := []string{"a", "b c", `C:\Program Files\x`, `quote"d`}
	if strings.Join(got.Args, "|") != strings.Join(want, "|") {
		t.Errorf("args = %q, want %q", got.Args, want)
	}
	if got.Root != th.Root() || got.SCM != th.SCMSocket() {
		t.Errorf("WINSIM_ROOT=%q WINSIM_SCM=%q, want %q and %q", got.Root, got.SCM, th.Root(), th.SCMSocket())
	}
	if got.Computername != "WIN-EXEC" {
		t.Errorf("COMPUTERNAME = %q", got.Computername)
	}
	if want := filepath.Join(th.Root(), "Users", "Administrator"); got.CWD != want {
		t.Errorf("working folder %q, want %q", got.CWD, want)
	}

	// .exe may be left out; stdin reaches the program.
	out, _, code = run(t, c, `C:\k\helper cat`, "from stdin\n")
	if code != 0 || out != "from stdin\n" {
		t.Errorf("cat: exit %d, stdout %q", code, out)
	}
	// Exit codes and stderr come back as they are.
	out, errOut, code = run(t, c, `C:\k\helper.exe fail 7 it broke`, "")
	if code != 7 || out != "" || strings.TrimSpace(errOut) != "it broke" {
		t.Errorf("fail: exit %d stdout %q stderr %q, want 7, empty, %q", code, out, errOut, "it broke")
	}
}

func TestExecUnknownProgramFailsAsCmd(t *testing.T) {
	th := newTestHost(t, Options{})
	c := th.dial(t)
	for _, tc := range []struct{ cmdline, name string }{
		{`C:\k\nothere.exe info`, `C:\k\nothere.exe`},
		{`pwsh -Command Get-Service`, `pwsh`}, // PowerShell 7 is not part of Windows Server
		{`"C:\Program Files\x\y.exe"`, `C:\Program Files\x\y.exe`},
	} {
		out, errOut, code := run(t, c, tc.cmdline, "")
		want := "'" + tc.name + "' is not recognized as an internal or external command, operable program or batch file.\r\n"
		if code != 1 || out != "" || errOut != want {
			t.Errorf("%s: exit %d stdout %q stderr %q, want 1, empty, %q", tc.cmdline, code, out, errOut, want)
		}
	}
}

func TestExecRefusesWindowsExecutable(t *testing.T) {
	th := newTestHost(t, Options{})
	pe, _ := th.Path(`C:\k\real.exe`)
	os.MkdirAll(filepath.Dir(pe), 0o755)
	if err := os.WriteFile(pe, append([]byte("MZ\x90\x00"), make([]byte, 60)...), 0o755); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, th.dial(t), `C:\k\real.exe --version`, "")
	if code != 1 || !strings.Contains(errOut, "cannot run a Windows executable on a simulated host") {
		t.Errorf("exit %d stderr %q, want 1 and the simulated-host refusal", code, errOut)
	}
}

func TestWrongKeyAndUserRefused(t *testing.T) {
	th := newTestHost(t, Options{})
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromKey(other)
	for _, tc := range []struct {
		user   string
		signer ssh.Signer
	}{{"Administrator", otherSigner}, {"guest", th.signer}} {
		_, err := ssh.Dial("tcp", th.Addr(), &ssh.ClientConfig{
			User: tc.user, Auth: []ssh.AuthMethod{ssh.PublicKeys(tc.signer), ssh.Password("x")},
			HostKeyCallback: ssh.FixedHostKey(th.HostKey()), Timeout: 10 * time.Second,
		})
		if err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
			t.Errorf("user %s with key %s: err = %v, want authentication refused", tc.user, ssh.FingerprintSHA256(tc.signer.PublicKey()), err)
		}
	}
	// Windows account names are case-insensitive.
	c, err := ssh.Dial("tcp", th.Addr(), &ssh.ClientConfig{
		User: "administrator", Auth: []ssh.AuthMethod{ssh.PublicKeys(th.signer)},
		HostKeyCallback: ssh.FixedHostKey(th.HostKey()), Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("lower-case user name refused: %v", err)
	}
	c.Close()
}

// administrators_authorized_keys as Windows tools write it: a byte order
// mark, CRLF line ends, comments and options.
func TestAuthorizedKeysFileAsWindowsWritesIt(t *testing.T) {
	th := newTestHost(t, Options{})
	other := newSigner(t)
	file, _ := th.Path(AuthorizedKeysPath)
	body := "\xef\xbb\xbf# keys for winnode\r\n" +
		strings.TrimSpace(string(ssh.MarshalAuthorizedKey(other.PublicKey()))) + " other\r\n" +
		`from="127.0.0.0/8" ` + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(th.signer.PublicKey()))) + " operator\r\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	th.dial(t).Close()
}
