package bootstrap

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/testkit"
)

// fixedEd25519 is a deterministic key so the golden file is stable.
func fixedEd25519(t *testing.T) ssh.PublicKey {
	t.Helper()
	priv := ed25519.NewKeyFromSeed([]byte("winnode-userdata-golden-seed-32b"))
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func fixedRSA(t *testing.T) ssh.PublicKey {
	t.Helper()
	// Not golden-tested, so a fresh key is fine.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func TestUserDataGolden(t *testing.T) {
	out, err := UserData(fixedEd25519(t))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "userdata-ed25519.golden", out)
}

func TestUserDataContents(t *testing.T) {
	for name, pub := range map[string]ssh.PublicKey{"ed25519": fixedEd25519(t), "rsa": fixedRSA(t)} {
		t.Run(name, func(t *testing.T) {
			out, err := UserData(pub)
			if err != nil {
				t.Fatal(err)
			}
			s := string(out)
			line := AuthorizedKey(pub)
			for _, want := range []string{
				"<powershell>\n",
				"</powershell>\n",
				"'" + line + "'",
				ssh.FingerprintSHA256(pub),
				"Add-WindowsCapability -Online",
				"Set-Service -Name sshd -StartupType Automatic",
				"-LocalPort $rule.Port",
				"Port = 22 }",
				"Port = 10250 }",
				`ssh\administrators_authorized_keys`,
				"/inheritance:r /grant '*S-1-5-32-544:F' /grant '*S-1-5-18:F'",
				"'PasswordAuthentication no'",
				"Restart-Service -Name sshd",
			} {
				if !strings.Contains(s, want) {
					t.Errorf("user data lacks %q", want)
				}
			}
			if strings.Count(s, line) != 1 {
				t.Errorf("the key appears %d times, want once", strings.Count(s, line))
			}
			again, _ := UserData(pub)
			if string(again) != s {
				t.Error("UserData is not deterministic")
			}
		})
	}
	a, _ := UserData(fixedEd25519(t))
	b, _ := UserData(fixedRSA(t))
	if string(a) == string(b) {
		t.Error("different keys gave the same user data")
	}
}

func TestAuthorizedKeyHasNoComment(t *testing.T) {
	line := AuthorizedKey(fixedEd25519(t))
	if strings.ContainsAny(line, "\n\r'") || !strings.HasPrefix(line, "ssh-ed25519 AAAA") {
		t.Errorf("AuthorizedKey = %q", line)
	}
}

// The Cluster API bootstrap data adds firewall rules to the shared steps;
// rules that could break out of the script's quoting are refused.
func TestSSHSetupScriptExtraRules(t *testing.T) {
	pub := fixedEd25519(t)
	body, err := SSHSetupScript(pub, []FirewallRule{{Name: "winnode-udp-4789", Protocol: "UDP", Port: 4789}})
	if err != nil {
		t.Fatal(err)
	}
	want := "New-NetFirewallRule -Name 'winnode-udp-4789' -DisplayName 'winnode-udp-4789' -Direction Inbound -Protocol UDP -LocalPort 4789 -Action Allow"
	if !strings.Contains(body, want) {
		t.Errorf("the script lacks %q:\n%s", want, body)
	}
	plain, err := SSHSetupScript(pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	ud, err := UserData(pub)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ud), plain) {
		t.Error("UserData does not run SSHSetupScript's steps")
	}
	for _, bad := range []FirewallRule{
		{Name: "x'; Remove-Item C:\\ -Recurse; '", Protocol: "TCP", Port: 80},
		{Name: "Upper", Protocol: "TCP", Port: 80},
		{Name: "x", Protocol: "TCP -Action Block", Port: 80},
		{Name: "x", Protocol: "UDP", Port: 65536},
	} {
		if _, err := SSHSetupScript(pub, []FirewallRule{bad}); err == nil {
			t.Errorf("rule %+v accepted", bad)
		}
	}
}
