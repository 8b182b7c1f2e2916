package cloud_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/hack/tools/winsimcloud"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/capibootstrap"
	"github.com/winnode/winnode/internal/winsim"
	"github.com/winnode/winnode/internal/winsim/cloud"
)

func newCloud(t *testing.T) (*cloud.Cloud, string) {
	t.Helper()
	c := cloud.New(cloud.Options{
		NewHost: func(name string) (*winsim.Host, error) {
			return winsim.New(winsim.Options{StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	url, stop, err := c.Serve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(); _ = c.Close() })
	return c, url
}

func call(t *testing.T, method, url string, body any) (int, string) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, r)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func userData(t *testing.T) ([]byte, ssh.Signer) {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	data, err := bootstrap.UserData(signer.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return data, signer
}

// TestClientContract: the test world's programs' client
// (hack/tools/winsimcloud.Client) against this server, through the
// lifecycle they drive. An instance booted with winnode's user data accepts
// the operator's key, has C:\k owned by Administrators, is created once
// (a second create returns it as it is) and is gone once deleted.
func TestClientContract(t *testing.T) {
	c, url := newCloud(t)
	client, err := winsimcloud.New(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data, signer := userData(t)

	inst, err := client.Create(ctx, "win-a", data)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	h := c.Host("win-a")
	want := winsimcloud.Instance{Name: "win-a", ID: inst.ID, ProviderID: winsimcloud.ProviderIDPrefix + inst.ID,
		Address: h.IP(), Hostname: h.Hostname(), State: winsimcloud.StateRunning}
	if *inst != want || !regexp.MustCompile(`^i-[0-9a-f]{17}$`).MatchString(inst.ID) {
		t.Fatalf("Create: %+v, want %+v with an EC2-style ID", *inst, want)
	}
	keys, err := os.ReadFile(mustPath(t, h, winsim.AuthorizedKeysPath))
	if err != nil || strings.TrimSpace(string(keys)) != bootstrap.AuthorizedKey(signer.PublicKey()) {
		t.Fatalf("administrators_authorized_keys = %q (%v), want the user data's key", keys, err)
	}
	owner, dacl, err := h.Security().Get(`C:\k`)
	if err != nil || owner != "S-1-5-32-544" || dacl != "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)" {
		t.Fatalf(`C:\k: owner %q DACL %q (%v)`, owner, dacl, err)
	}

	// Idempotent: the same instance again, user data unchanged.
	other, _ := userData(t)
	if again, err := client.Create(ctx, "win-a", other); err != nil || *again != want {
		t.Fatalf("second Create: %+v, %v; want the same instance", again, err)
	}
	if got, err := client.Get(ctx, "win-a"); err != nil || *got != want {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	if err := client.Delete(ctx, "win-a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if h.Up() {
		t.Error("the host still runs after its instance was deleted")
	}
	if _, err := client.Get(ctx, "win-a"); !errors.Is(err, winsimcloud.ErrNoInstance) {
		t.Errorf("Get after Delete: %v, want ErrNoInstance", err)
	}
	if err := client.Delete(ctx, "win-a"); err != nil {
		t.Errorf("Delete of a deleted instance: %v, want none (gone already)", err)
	}
	// The server's refusals reach the client as errors with its text.
	if _, err := client.Create(ctx, "Bad_Name", data); err == nil || errors.Is(err, winsimcloud.ErrNoInstance) || !strings.Contains(err.Error(), "not an instance name") {
		t.Errorf("Create of a bad name: %v, want the cloud's refusal", err)
	}
}

func mustPath(t *testing.T, h *winsim.Host, p string) string {
	t.Helper()
	local, err := h.Path(p)
	if err != nil {
		t.Fatal(err)
	}
	return local
}

// User data that is not a <powershell> script runs nothing: the host boots
// without the operator's key, as on a real cloud.
func TestUserDataWithoutScriptRunsNothing(t *testing.T) {
	c, url := newCloud(t)
	if code, body := call(t, "PUT", url+"/instances/plain", map[string][]byte{"userData": []byte("#cloud-config\n")}); code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if _, err := os.Stat(mustPath(t, c.Host("plain"), winsim.AuthorizedKeysPath)); !os.IsNotExist(err) {
		t.Errorf("administrators_authorized_keys exists (%v); nothing should have written it", err)
	}
}

// Bad requests are refused with a message naming the input; nothing boots.
func TestBadRequests(t *testing.T) {
	c, url := newCloud(t)
	for _, tc := range []struct {
		name, path string
		body       any
		want       string
	}{
		{"bad name", "/instances/Bad_Name", map[string][]byte{"userData": nil}, "not an instance name"},
		{"unknown field", "/instances/x", map[string]string{"script": "e30="}, "not {\"userData\": base64}"},
		{"too much user data", "/instances/y", map[string][]byte{"userData": make([]byte, 20000)}, "over the limit"},
		{"bad key", "/instances/z", map[string][]byte{"userData": []byte("<powershell>\nSet-Content -Path $authorizedKeys -Value 'ssh-ed25519 !!!'\n</powershell>")}, "administrators' key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, "PUT", url+tc.path, tc.body)
			if code < 400 || !strings.Contains(body, tc.want) {
				t.Errorf("%d %q, want an error containing %q", code, body, tc.want)
			}
		})
	}
	if n := c.Names(); len(n) != 0 {
		t.Errorf("instances %v after bad requests, want none", n)
	}
}

// Cluster API bootstrap data (cloudbase-init's #ps1_sysnative form) names
// the host, authorizes the key and leaves Cluster API's sentinel; the
// instance reports the new name.
func TestClusterAPIBootstrapData(t *testing.T) {
	c, url := newCloud(t)
	_, signer := userData(t)
	data, err := capibootstrap.BootstrapData(capibootstrap.DataInput{
		Namespace: "capi", Machine: "windows-md-0-5f7c9d8b4-x2vzq", ComputerName: "windows-gyok56", PublicKey: signer.PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	code, body := call(t, "PUT", url+"/instances/windows-md-0-5f7c9d8b4-x2vzq", map[string][]byte{"userData": data})
	if code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	var inst cloud.Instance
	if err := json.Unmarshal([]byte(body), &inst); err != nil {
		t.Fatal(err)
	}
	h := c.Host(inst.Name)
	if inst.Hostname != "windows-gyok56" || h.Hostname() != "windows-gyok56" {
		t.Errorf("instance hostname %q, host %q; want the bootstrap data's computer name", inst.Hostname, h.Hostname())
	}
	keys, err := os.ReadFile(mustPath(t, h, winsim.AuthorizedKeysPath))
	if err != nil || strings.TrimSpace(string(keys)) != bootstrap.AuthorizedKey(signer.PublicKey()) {
		t.Errorf("administrators_authorized_keys = %q (%v), want the bootstrap data's key", keys, err)
	}
	if got, err := os.ReadFile(mustPath(t, h, `C:\run\cluster-api\bootstrap-success.complete`)); err != nil || strings.TrimSpace(string(got)) != "success" {
		t.Errorf("Cluster API's sentinel: %q, %v", got, err)
	}
}

// TestImages: an instance boots from the image its request names, a
// folder whose C/ is copied onto the host's C:\ (as `winnodectl image`
// writes it); an image the cloud does not know is refused (400), and no
// instance is made.
func TestImages(t *testing.T) {
	c, url := newCloud(t)
	img := t.TempDir()
	if err := os.MkdirAll(img+"/C/k", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img+"/C/k/payload-manifest.json", []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.AddImage("winnode-v1", img)
	client, err := winsimcloud.New(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CreateFrom(ctx, "from-image", "winnode-v1", nil); err != nil {
		t.Fatal(err)
	}
	local, _ := c.Host("from-image").Path(`C:\k\payload-manifest.json`)
	if data, err := os.ReadFile(local); err != nil || string(data) != "{}" {
		t.Errorf("the image's file on the host: %q, %v", data, err)
	}
	_, err = client.CreateFrom(ctx, "no-image", "winnode-v9", nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), `image "winnode-v9"`) {
		t.Errorf("an unknown image: %v; want a 400 naming it", err)
	}
	if c.Host("no-image") != nil {
		t.Error("an instance was made for an unknown image")
	}
}

// VMs cloned from one image never share SSH host keys: winnode's user data
// and Cluster API bootstrap data make a VM keys of its own at its first
// boot (recognised by its SMBIOS UUID), and keep them at the next boots.
func TestUserDataGivesClonesTheirOwnHostKeys(t *testing.T) {
	data, signer := userData(t)
	bootstrapData, err := capibootstrap.BootstrapData(capibootstrap.DataInput{Namespace: "default", Machine: "md-0", PublicKey: signer.PublicKey(), ComputerName: "WIN-CLONE-B"})
	if err != nil {
		t.Fatal(err)
	}
	newVM := func() *winsim.Host {
		h, err := winsim.New(winsim.Options{StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		return h
	}
	image := newVM()
	for _, script := range [][]byte{data, bootstrapData} {
		clone := newVM()
		if err := clone.CloneHostKeysOf(image); err != nil {
			t.Fatal(err)
		}
		if clone.Fingerprint() != image.Fingerprint() {
			t.Fatal("the clone does not have the image's host key to begin with")
		}
		if err := clone.RunUserData(script); err != nil {
			t.Fatal(err)
		}
		first := clone.Fingerprint()
		if first == image.Fingerprint() {
			t.Errorf("after its first boot's script, the clone still presents the image's host key %s", first)
		}
		if err := clone.RunUserData(script); err != nil {
			t.Fatal(err)
		}
		if again := clone.Fingerprint(); again != first {
			t.Errorf("the script made the VM new host keys at its second boot: %s, then %s", first, again)
		}
	}
}

// A provider can report a wrong address (MisreportAddresses): the next
// instances of a name prefix report the addresses given, in turn, also on
// a repeated create; then, and for other names, each reports its host's
// own address.
func TestMisreportedAddresses(t *testing.T) {
	c, _ := newCloud(t)
	c.MisreportAddresses("bad-", "0.0.0.0", "169.254.169.254")
	want := map[string]string{"good": "", "bad-1": "0.0.0.0", "bad-2": "169.254.169.254", "bad-3": ""}
	for _, name := range []string{"good", "bad-1", "bad-2", "bad-3", "bad-1"} {
		inst, err := c.Create(name, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		w := want[name]
		if w == "" {
			w = c.Host(name).IP()
		}
		if got, _ := c.Get(name); inst.Address != w || got.Address != w {
			t.Errorf("instance %s reports %q (Get: %q), want %q", name, inst.Address, got.Address, w)
		}
	}
}
