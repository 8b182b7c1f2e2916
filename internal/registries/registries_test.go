package registries

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winnode/winnode/internal/plan"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"

// A hosts.toml as containerd's docs write one: mirrors in file order, the
// server last, a CA file given beside it.
func TestParse(t *testing.T) {
	data := `server = "https://registry.example.com"
capabilities = ["pull", "resolve"]

[host."https://mirror-b.example.com/org"]
  capabilities = ["pull"]
  ca = "mirror-ca.crt"
  dial_timeout = "5s"

[host."mirror-a.example.com"]
  skip_verify = true
  [host."mirror-a.example.com".header]
    x-custom = ["1", "2"]
`
	r, err := Parse("registry.example.com", []byte(data), map[string][]byte{"mirror-ca.crt": []byte(testCA)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Server.URL != "https://registry.example.com" || !slices.Equal(r.Server.Capabilities, []string{"pull", "resolve"}) {
		t.Errorf("server %+v", r.Server)
	}
	if len(r.Mirrors) != 2 || r.Mirrors[0].URL != "https://mirror-b.example.com/org" || r.Mirrors[1].URL != "https://mirror-a.example.com" {
		t.Fatalf("mirrors %+v: want the file's order, with https added", r.Mirrors)
	}
	if string(r.Mirrors[0].CA) != testCA || r.Mirrors[0].DialTimeout != "5s" || !r.Mirrors[1].SkipVerify {
		t.Errorf("mirror settings %+v", r.Mirrors)
	}
	if !slices.Equal(r.Mirrors[1].Header["x-custom"], []string{"1", "2"}) {
		t.Errorf("header %v", r.Mirrors[1].Header)
	}
}

// What containerd would ignore or refuse is refused, naming it.
func TestParseRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ data, want string }{
		"unknown key":     {"server = \"https://r\"\nmirror = \"x\"\n", "unknown keys (containerd would ignore them): mirror"},
		"unknown in host": {"[host.\"https://m\"]\n  capabilitys = [\"pull\"]\n", "host.https://m.capabilitys"},
		"bad capability":  {"[host.\"https://m\"]\n  capabilities = [\"fetch\"]\n", `capability "fetch"`},
		"syntax":          {"[host.\"https://m\"\n", "row 1"},
		"client":          {"[host.\"https://m\"]\n  client = \"c.pem\"\n", "client certificates"},
		"missing ca":      {"ca = \"nope.crt\"\n", `ca "nope.crt": no such CA file`},
		"ca type":         {"ca = 3\n", "ca:"},
		"bad url":         {"server = \"ftp://r\"\n", "not an http or https URL"},
		"bad timeout":     {"[host.\"https://m\"]\n  dial_timeout = \"soon\"\n", "dial_timeout"},
		"header newline":  {"[header]\n  x = \"a\\nb\"\n", "spans lines"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("r.example.com", []byte(tc.data), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// The ConfigMap: one key per registry folder (the port between
// underscores), CA files by name, credentials added; a bad key is left out
// with an error naming it, the others kept.
func TestFromConfigMap(t *testing.T) {
	creds := Credentials{"mirror.example.com": base64.StdEncoding.EncodeToString([]byte("u:p"))}
	regs, errs := FromConfigMap(map[string]string{
		"quay.io":     "[host.\"https://mirror.example.com/quay\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"mirror.crt\"\n",
		"myreg_5000_": "server = \"http://myreg:5000\"\n",
		"mirror.crt":  testCA,
		"bad.example": "nonsense = 1\n",
		"a_b":         "",
	}, creds)
	if len(regs) != 2 || regs[0].Host != "myreg:5000" || regs[1].Host != "quay.io" {
		t.Fatalf("registries %+v", regs)
	}
	if got := regs[1].Mirrors[0].Header["authorization"]; !slices.Equal(got, []string{"Basic dTpw"}) {
		t.Errorf("the mirror's credentials: %v", got)
	}
	if string(regs[1].Mirrors[0].CA) != testCA {
		t.Errorf("CA %q", regs[1].Mirrors[0].CA)
	}
	msg := errorsText(errs)
	if !strings.Contains(msg, `key "bad.example"`) || !strings.Contains(msg, `key "a_b": registry "a_b": not a registry host`) || len(errs) != 2 {
		t.Errorf("errors %q: want bad.example's and a_b's", msg)
	}
}

func errorsText(errs []error) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "; ")
}

// OpenShift's mirror sets, as the Windows Machine Config Operator reads
// them: digest mirrors pull, tag mirrors also resolve, organisation paths
// kept (after /v2, with override_path), NeverContactSource makes the first
// mirror the server.
func TestFromMirrorSets(t *testing.T) {
	idms := []configv1.ImageDigestMirrorSet{{
		ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{
			{Source: "quay.io/openshift-release-dev/ocp-release", Mirrors: []configv1.ImageMirror{"mirror.example.com:5000/org/openshift-release-dev/ocp-release", "other.example.com/ocp"}},
			{Source: "registry.redhat.io", Mirrors: []configv1.ImageMirror{"mirror.example.com/redhat"}, MirrorSourcePolicy: configv1.NeverContactSource},
		}},
	}}
	itms := []configv1.ImageTagMirrorSet{{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: configv1.ImageTagMirrorSetSpec{ImageTagMirrors: []configv1.ImageTagMirrors{
			{Source: "quay.io/openshift-release-dev/ocp-release", Mirrors: []configv1.ImageMirror{"mirror.example.com:5000/org/openshift-release-dev/ocp-release"}},
		}},
	}}
	regs, warnings := FromMirrorSets(idms, itms, Credentials{"mirror.example.com": "dTpw"})
	if len(regs) != 2 {
		t.Fatalf("registries %+v", regs)
	}
	quay, redhat := regs[0], regs[1]
	if quay.Host != "quay.io" || len(quay.Mirrors) != 1 || quay.Mirrors[0].URL != "https://mirror.example.com:5000/v2/org" || !quay.Mirrors[0].OverridePath ||
		!slices.Equal(quay.Mirrors[0].Capabilities, []string{"pull", "resolve"}) || quay.Server.URL != "" {
		t.Errorf("quay.io %+v", quay)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "other.example.com/ocp") {
		t.Errorf("warnings %q: want the mirror whose path cannot be expressed", warnings)
	}
	if redhat.Server.URL != "https://mirror.example.com/v2/redhat" || !redhat.Server.OverridePath || !slices.Equal(redhat.Mirrors[0].Capabilities, []string{"pull"}) {
		t.Errorf("registry.redhat.io %+v: NeverContactSource makes the first mirror the server", redhat)
	}
	if got := redhat.Mirrors[0].Header["authorization"]; !slices.Equal(got, []string{"Basic dTpw"}) {
		t.Errorf("credentials %v", got)
	}
}

// Docker configs name registries as hosts, URLs or repositories.
func TestParseCredentials(t *testing.T) {
	c, err := ParseCredentials([]byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"YTpi"},"quay.io/org":{"username":"u","password":"p"},"x":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c["docker.io"] != "YTpi" || c["quay.io"] != "dTpw" || len(c) != 2 {
		t.Errorf("credentials %v", c)
	}
	if _, err := ParseCredentials([]byte(`{"auths":{"q":{"auth":"%%%"}}}`)); err == nil {
		t.Error("credentials that are not base64 were accepted")
	}
	// The registry itself gets its host's credentials.
	r := c.Apply(plan.RegistryHosts{Host: "quay.io"})
	if !slices.Equal(r.Server.Header["authorization"], []string{"Basic dTpw"}) || r.Server.URL != "" {
		t.Errorf("server %+v", r.Server)
	}
}

// Parsers of outside input never panic, and what Parse accepts renders to
// a hosts.toml that reads back the same (winnode writes what it read).
func FuzzParse(f *testing.F) {
	f.Add("server = \"https://r\"\n[host.\"https://m/o\"]\n  capabilities = [\"pull\"]\n  ca = \"c.crt\"\n  [host.\"https://m/o\".header]\n    a = \"b\"\n")
	f.Add("[host.\"m\"]\nskip_verify = true\n")
	f.Add("x = [")
	f.Fuzz(func(t *testing.T, data string) {
		r, err := Parse("r.example.com", []byte(data), map[string][]byte{"c.crt": []byte(testCA)})
		if err != nil {
			return
		}
		rendered := renderedHostsTOML(t, r)
		back, err := Lenient(r.Host, rendered)
		if err != nil {
			t.Fatalf("the rendered hosts.toml does not read back: %v\n%s", err, rendered)
		}
		if len(back.Mirrors) != len(r.Mirrors) || back.Server.URL != r.Server.URL {
			t.Fatalf("read back %+v, want %+v\n%s", back, r, rendered)
		}
	})
}

// renderedHostsTOML is the hosts.toml a plan writes for r.
func renderedHostsTOML(t *testing.T, r plan.RegistryHosts) []byte {
	t.Helper()
	for _, g := range plan.RegistryFiles(r) {
		if strings.HasSuffix(g.HostPath, `\hosts.toml`) {
			return g.Content
		}
	}
	t.Fatal("no hosts.toml rendered")
	return nil
}

func FuzzFromConfigMap(f *testing.F) {
	f.Add("quay.io", "[host.\"https://m\"]\n", "{\"auths\":{\"m\":{\"auth\":\"YTpi\"}}}")
	f.Add("myreg_5000_", "server = \"http://myreg:5000\"", "{}")
	f.Fuzz(func(t *testing.T, key, value, dockerConfig string) {
		creds, err := ParseCredentials([]byte(dockerConfig))
		if err != nil {
			creds = nil
		}
		regs, errs := FromConfigMap(map[string]string{key: value}, creds)
		if len(regs)+len(errs) > 1 {
			t.Fatalf("one key gave %d registries and %d errors", len(regs), len(errs))
		}
		for _, r := range regs {
			if err := plan.CheckRegistry(r); err != nil {
				t.Fatalf("an accepted registry fails the plan's check: %v", err)
			}
		}
	})
}
