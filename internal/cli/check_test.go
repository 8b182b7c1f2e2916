package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/winsim"
)

// TestCheckGolden runs winnodectl check against a healthy simulated host
// and one with every failing condition, and compares the tables (with what
// differs between runs replaced) with testdata/check-*.golden. Nothing is
// left on either host.
func TestCheckGolden(t *testing.T) {
	cl := getCluster(t)
	payloadDir := simulatedPayload(t)
	for _, tc := range []struct {
		name string
		opts winsim.Options
		code int
	}{
		{"healthy", winsim.Options{}, ExitOK},
		{"broken", winsim.Options{Build: "2022", UBR: 643, FreeDiskGiB: 12, ClockOffset: -10 * time.Minute,
			WithoutContainersFeature: true, NoAPIRoute: true, DHCP: true, Defender: true, ForeignContainerd: true}, ExitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.StandinBinary = testenv.Binary(t, "cmd/winsim-standin")
			h, key := fixture.SimHost(t, tc.opts)
			keyFile := filepath.Join(t.TempDir(), "winnode-key")
			if err := os.WriteFile(keyFile, key.PEM, 0o600); err != nil {
				t.Fatal(err)
			}
			r := run(t, "", "check", h.IP(), "--port", strconv.Itoa(h.Port()), "--ssh-key", keyFile, "--allow-addresses", simHosts,
				"--kubeconfig", cl.env.KubeconfigPath, "--payload-dir", payloadDir)
			if r.code != tc.code {
				t.Fatalf("check: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.out, r.err)
			}
			testkit.Golden(t, "check-"+tc.name+".golden", normalizeCheck(r.out, h, cl.env.Host))
			for _, p := range []string{h.Profile() + `\winnode-agent.exe`, `C:\k`, `C:\ProgramData\winnode`} {
				if local, err := h.Path(p); err == nil {
					if _, err := os.Stat(local); err == nil {
						t.Errorf("check left %s on the host", p)
					}
				}
			}
		})
	}
}

var (
	lookupRe = regexp.MustCompile(`\(lookup [^)]*\)`)
	skewRe   = regexp.MustCompile(`\d+m\d+s (behind|ahead of)`)
)

// normalizeCheck replaces in check's output what differs from run to run:
// the host's name and address, the API server's address, the resolver's
// answer and the measured clock skew.
func normalizeCheck(out string, h *winsim.Host, apiServer string) string {
	out = strings.ReplaceAll(out, strings.TrimPrefix(apiServer, "https://"), "API-SERVER")
	out = strings.ReplaceAll(out, strings.ToLower(h.Hostname()), "HOSTNAME")
	out = strings.ReplaceAll(out, h.IP(), "HOST-IP")
	out = lookupRe.ReplaceAllString(out, "(lookup failed)")
	return skewRe.ReplaceAllString(out, "SKEW $1")
}
