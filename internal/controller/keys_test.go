package controller

import (
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/sshkey"
)

// testKeyPEM is an ed25519 key in OpenSSH form, for tests of other files.
func testKeyPEM(t testing.TB) []byte { return fixture.PEMOpenSSH(t, fixture.PrivateKeys()["ed25519"]) }

func mustParse(t *testing.T, data []byte) ssh.Signer {
	t.Helper()
	s, err := sshkey.ParsePrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
