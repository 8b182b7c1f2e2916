package cli

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/bootstrap"
)

// writeKeyFiles writes priv as an OpenSSH private key and its .pub beside
// it, and returns both paths.
func writeKeyFiles(t *testing.T, priv any) (privFile, pubFile string) {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(priv, "test key")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	privFile, pubFile = filepath.Join(dir, "key"), filepath.Join(dir, "key.pub")
	if err := os.WriteFile(privFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubFile, ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	return privFile, pubFile
}

func TestUserData(t *testing.T) {
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	privFile, pubFile := writeKeyFiles(t, edPriv)
	signer, _ := ssh.NewSignerFromKey(edPriv)
	want, err := bootstrap.UserData(signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}

	for name, file := range map[string]string{"public key": pubFile, "private key": privFile} {
		t.Run(name, func(t *testing.T) {
			r := run(t, "", "userdata", "--ssh-key", file)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.err)
			}
			// The operator's generator, byte for byte.
			if r.out != string(want) {
				t.Errorf("winnodectl userdata printed something other than the operator's user data:\n%s", r.out)
			}
			if !strings.Contains(r.out, bootstrap.AuthorizedKey(signer.PublicKey())) {
				t.Errorf("the user data does not authorize the key")
			}
		})
	}

	t.Run("weak RSA key", func(t *testing.T) {
		weak, err := rsa.GenerateKey(rand.Reader, 1024)
		if err != nil {
			t.Fatal(err)
		}
		_, pub := writeKeyFiles(t, weak)
		r := run(t, "", "userdata", "--ssh-key", pub)
		if r.code != ExitFailed || r.out != "" || !strings.Contains(r.err, "1024 bits") {
			t.Errorf("a 1024-bit RSA key: exit %d, stdout %d bytes, stderr %q; want exit 1, nothing printed, the size named", r.code, len(r.out), r.err)
		}
	})
	t.Run("not a key", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "notes.txt")
		os.WriteFile(file, []byte("hello\n"), 0o644)
		r := run(t, "", "userdata", "--ssh-key", file)
		if r.code != ExitFailed || !strings.Contains(r.err, file) || !strings.Contains(r.err, "neither an OpenSSH public key") {
			t.Errorf("exit %d, stderr %q", r.code, r.err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		r := run(t, "", "userdata", "--ssh-key", filepath.Join(t.TempDir(), "nope.pub"))
		if r.code != ExitFailed || !strings.Contains(r.err, "nope.pub") {
			t.Errorf("exit %d, stderr %q", r.code, r.err)
		}
	})
}

func TestParsePublicKeyKinds(t *testing.T) {
	strong, _ := rsa.GenerateKey(rand.Reader, 2048)
	privFile, pubFile := writeKeyFiles(t, strong)
	for _, f := range []string{privFile, pubFile} {
		data, _ := os.ReadFile(f)
		if _, err := parsePublicKey(data); err != nil {
			t.Errorf("RSA 2048 (%s): %v", filepath.Base(f), err)
		}
	}
	// The operator refuses ECDSA keys; so does userdata.
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ecPub := writeKeyFiles(t, ec)
	data, _ := os.ReadFile(ecPub)
	if _, err := parsePublicKey(data); err == nil || !strings.Contains(err.Error(), "ecdsa") {
		t.Errorf("an ECDSA key: err = %v, want a refusal naming the type", err)
	}
	// An encrypted private key: OpenSSH's form carries the public half.
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(edPriv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parsePublicKey(pem.EncodeToMemory(block)); err != nil {
		t.Errorf("encrypted OpenSSH private key: %v", err)
	}
}

// FuzzParsePublicKey: whatever file is given, parsePublicKey returns a key
// the operator accepts, or an error; it never panics.
func FuzzParsePublicKey(f *testing.F) {
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(edPriv)
	block, _ := ssh.MarshalPrivateKey(edPriv, "")
	f.Add(ssh.MarshalAuthorizedKey(signer.PublicKey()))
	f.Add(pem.EncodeToMemory(block))
	f.Add([]byte("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC"))
	f.Add([]byte("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		pub, err := parsePublicKey(data)
		if err == nil {
			if pub == nil {
				t.Fatal("no key and no error")
			}
			if err := checkKeyStrength(pub); err != nil {
				t.Fatalf("returned a key the operator refuses: %v", err)
			}
			if _, err := bootstrap.UserData(pub); err != nil {
				t.Fatalf("accepted a key the user data cannot embed: %v", err)
			}
		}
	})
}
