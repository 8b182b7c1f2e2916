package winsim

import (
	"bytes"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// requireOpenSSH makes sure OpenSSH's ssh and sftp are installed, running
// the project's installer when they are missing.
func requireOpenSSH(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sftp"); err == nil {
		if _, err := exec.LookPath("ssh"); err == nil {
			return
		}
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "hack", "install-openssh-client.sh")
	out, err := exec.Command("sh", script).CombinedOutput()
	if err != nil {
		if _, aerr := exec.LookPath("apt-get"); aerr != nil {
			t.Skipf("OpenSSH's client is missing and apt-get is not available to install it: %v\n%s", err, out)
		}
		t.Fatalf("installing OpenSSH's client with %s: %v\n%s", script, err, out)
	}
}

// openSSH is the argument list and files for OpenSSH's clients against th.
type openSSH struct {
	dir, key, knownHosts string
	host                 string
	port                 string
}

func newOpenSSH(t *testing.T, th *testHost) *openSSH {
	t.Helper()
	requireOpenSSH(t)
	dir := t.TempDir()
	block, err := ssh.MarshalPrivateKey(th.key, "test")
	if err != nil {
		t.Fatal(err)
	}
	o := &openSSH{dir: dir, key: filepath.Join(dir, "id_ed25519"), knownHosts: filepath.Join(dir, "known_hosts")}
	if err := os.WriteFile(o.key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(th.Addr())
	o.host, o.port = host, port
	kh := host
	if port != "22" {
		kh = "[" + host + "]:" + port
	}
	line := kh + " " + string(ssh.MarshalAuthorizedKey(th.HostKey()))
	if err := os.WriteFile(o.knownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *openSSH) options() []string {
	return []string{"-F", "/dev/null", "-i", o.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "UserKnownHostsFile=" + o.knownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10"}
}

func (o *openSSH) ssh(t *testing.T, command string) (string, string, int) {
	t.Helper()
	args := append(o.options(), "-p", o.port, "Administrator@"+o.host, command)
	cmd := exec.Command("ssh", args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("ssh: %v", err)
	}
	return out.String(), errOut.String(), code
}

func (o *openSSH) sftp(t *testing.T, batch string) string {
	t.Helper()
	bf := filepath.Join(o.dir, "batch")
	if err := os.WriteFile(bf, []byte(batch), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(o.options(), "-P", o.port, "-b", bf, "Administrator@"+o.host)
	cmd := exec.Command("sftp", args...)
	cmd.Dir = o.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sftp batch failed: %v\n%s", err, out)
	}
	return string(out)
}

func TestOpenSSHClients(t *testing.T) {
	th := newTestHost(t, Options{})
	installHelper(t, th.Host, `C:\k\helper.exe`)
	o := newOpenSSH(t, th)

	// sftp: mkdir, put, rename over an existing file, ls, get, rm.
	if err := os.WriteFile(filepath.Join(o.dir, "local.txt"), []byte("payload v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := o.sftp(t, strings.Join([]string{
		"mkdir /C:/k/staging",
		"put local.txt /C:/k/staging/kubelet.exe",
		"put local.txt /C:/k/kubelet.exe",
		`put local.txt 'C:\k\Staging\new.exe'`,
		"rename /C:/k/staging/new.exe /C:/k/kubelet.exe",
		"ls -1 /C:/k/staging",
		"get /C:/K/KUBELET.EXE fetched.txt",
		"rm /C:/k/staging/kubelet.exe",
		"rmdir /C:/k/staging",
		"ls -1 /C:/k",
	}, "\n")+"\n")
	if !strings.Contains(out, "kubelet.exe") {
		t.Errorf("sftp ls did not list kubelet.exe:\n%s", out)
	}
	got, err := os.ReadFile(filepath.Join(o.dir, "fetched.txt"))
	if err != nil || string(got) != "payload v2" {
		t.Errorf("fetched %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(th.Root(), "k", "staging")); !os.IsNotExist(err) {
		t.Errorf("C:\\k\\staging still exists after rmdir: %v", err)
	}

	// ssh: exec with Windows quoting, exit status, the unknown-program text.
	stdout, stderr, code := o.ssh(t, `C:\k\helper.exe json "two words" plain`)
	if code != 0 || !strings.Contains(stdout, `"args":["two words","plain"]`) {
		t.Errorf("ssh exec: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	_, _, code = o.ssh(t, `C:\k\helper.exe fail 42 nope`)
	if code != 42 {
		t.Errorf("exit status over OpenSSH = %d, want 42", code)
	}
	_, stderr, code = o.ssh(t, `winnode-agent.exe info`)
	if code != 1 || !strings.Contains(stderr, "'winnode-agent.exe' is not recognized as an internal or external command, operable program or batch file.") {
		t.Errorf("unknown program over OpenSSH: exit %d stderr %q", code, stderr)
	}

	// A key the host does not list is refused.
	other := newTestHost(t, Options{})
	o2 := newOpenSSH(t, other)
	o2.host, o2.port = o.host, o.port // o2's key (other's) against th
	if err := os.WriteFile(o2.knownHosts, []byte(knownHostsLine(th)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = o2.ssh(t, `C:\k\helper.exe json`)
	if code != 255 || !strings.Contains(stderr, "Permission denied") {
		t.Errorf("wrong key: exit %d stderr %q, want 255 and Permission denied", code, stderr)
	}
}

func knownHostsLine(th *testHost) string {
	host, port, _ := net.SplitHostPort(th.Addr())
	if port != "22" {
		host = "[" + host + "]:" + port
	}
	_ = strconv.Itoa
	return host + " " + string(ssh.MarshalAuthorizedKey(th.HostKey()))
}
