package capibootstrap

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/testkit"
)

// fixedKey is a deterministic key so the golden files are stable.
func fixedKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	priv := ed25519.NewKeyFromSeed([]byte("winnode-capi-golden-seed-32bytes"))
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func TestBootstrapDataGolden(t *testing.T) {
	machine := "windows-workers-md-0-5f7c9d8b4-x2vzq"
	for _, tc := range []struct {
		golden   string
		firewall []bootstrap.FirewallRule
	}{
		{"bootstrap-data.golden", nil},
		{"bootstrap-data-firewall.golden", []bootstrap.FirewallRule{
			{Name: "winnode-udp-4789", Protocol: "UDP", Port: 4789},
			{Name: "winnode-tcp-80", Protocol: "TCP", Port: 80},
		}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			data, err := BootstrapData(DataInput{
				Namespace: "capi-clusters", Machine: machine,
				ComputerName: ComputerName("capi-clusters", machine, "", 0),
				PublicKey:    fixedKey(t), Firewall: tc.firewall,
			})
			if err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, tc.golden, data)
		})
	}
}

// What cloudbase-init and Cluster API rely on, said outside the golden file.
func TestBootstrapDataContents(t *testing.T) {
	pub := fixedKey(t)
	data, err := BootstrapData(DataInput{Namespace: "ns", Machine: "m-1", ComputerName: "m-1-abcdef", PublicKey: pub})
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if !strings.HasPrefix(s, "#ps1_sysnative\n") {
		t.Errorf("cloudbase-init recognises PowerShell by the first line #ps1_sysnative; got %q", strings.SplitN(s, "\n", 2)[0])
	}
	for _, want := range []string{
		"Set-Content -Path $authorizedKeys -Value '" + bootstrap.AuthorizedKey(pub) + "'",
		"$computerName = 'm-1-abcdef'",
		"Rename-Computer -NewName $computerName -Force\n    exit 1003\n",
		`C:\run\cluster-api\bootstrap-success.complete`,
		"New-NetFirewallRule -Name $rule.Name",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("bootstrap data lacks %q", want)
		}
	}
	for _, never := range []string{"PRIVATE KEY", "token", "kubeconfig", "<persist>"} {
		if strings.Contains(strings.ToLower(s), strings.ToLower(never)) {
			t.Errorf("bootstrap data contains %q", never)
		}
	}
}

func TestBootstrapDataRefusesBadInput(t *testing.T) {
	pub := fixedKey(t)
	for name, in := range map[string]DataInput{
		"computer name too long":   {Namespace: "ns", Machine: "m", ComputerName: "abcdefghijklmnop", PublicKey: pub},
		"quote in computer name":   {Namespace: "ns", Machine: "m", ComputerName: "a'b", PublicKey: pub},
		"line break in machine":    {Namespace: "ns", Machine: "m\nx", ComputerName: "m-abcdef", PublicKey: pub},
		"quote in a firewall rule": {Namespace: "ns", Machine: "m", ComputerName: "m-abcdef", PublicKey: pub, Firewall: []bootstrap.FirewallRule{{Name: "x'", Protocol: "TCP", Port: 1}}},
		"bad firewall protocol":    {Namespace: "ns", Machine: "m", ComputerName: "m-abcdef", PublicKey: pub, Firewall: []bootstrap.FirewallRule{{Name: "x", Protocol: "TCP; rm", Port: 1}}},
		"firewall port 0":          {Namespace: "ns", Machine: "m", ComputerName: "m-abcdef", PublicKey: pub, Firewall: []bootstrap.FirewallRule{{Name: "x", Protocol: "TCP", Port: 0}}},
	} {
		if _, err := BootstrapData(in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
