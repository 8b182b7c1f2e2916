package host

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/fixture"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/winsim"
)

// fakeAgentName is the name under which this test binary, placed on a
// simulated host, acts as a small stand-in agent (fakeAgentMain) instead of
// running the tests.
const fakeAgentName = "fakeagent.exe"

// fakeAgentPath is where the tests put it on the host.
const fakeAgentPath = `C:\k\fakeagent.exe`

func TestMain(m *testing.M) {
	if strings.EqualFold(filepath.Base(os.Args[0]), fakeAgentName) {
		os.Exit(fakeAgentMain(os.Args[1:]))
	}
	testenv.Main(m) // removes the programs testenv.Binary built

}

// fakeAgentMain answers as the agent does (one JSON document on stdout,
// logs on stderr), or misbehaves on request:
//
//	info          print a plan.Info
//	fail          print a plan.ErrorDocument, exit 3
//	garbage       print text, exit 0
//	echo          print {"stdin": <stdin>, "args": [...]}
//	sleep         sleep for a minute
//	big N         print N bytes
func fakeAgentMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "fakeagent: no command")
		return 2
	}
	out := json.NewEncoder(os.Stdout)
	fmt.Fprintln(os.Stderr, "fakeagent: running", args[0])
	switch args[0] {
	case "info":
		_ = out.Encode(plan.Info{SchemaVersion: "v1alpha1", Hostname: "WIN-FAKE", IPv4: []string{"127.0.0.1"}})
		return 0
	case "fail":
		_ = out.Encode(plan.ErrorDocument{SchemaVersion: "v1alpha1", Error: plan.Error{Code: plan.ErrService, Message: "kubelet did not start", Service: "kubelet"}})
		return 3
	case "garbage":
		fmt.Println("Windows PowerShell\r\nCopyright (C) Microsoft Corporation.")
		return 0
	case "echo":
		in, _ := io.ReadAll(os.Stdin)
		_ = out.Encode(map[string]any{"stdin": string(in), "args": args[1:]})
		return 0
	case "sleep":
		time.Sleep(time.Minute)
		return 0
	case "big":
		// n bytes of "x", written in chunks (n may be more than memory holds:
		// an answer that does not end).
		var n int
		fmt.Sscan(args[1], &n)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for n > 0 {
			w := min(n, len(chunk))
			if _, err := os.Stdout.Write(chunk[:w]); err != nil {
				return 1
			}
			n -= w
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "fakeagent: unknown command", args[0])
	return 2
}

// simHost is a started simulated host and a key it accepts.
type simHost struct {
	*winsim.Host
	signer ssh.Signer
}

// newSimHost starts a simulated host (in a new state folder unless opts
// says otherwise) that accepts a new key.
func newSimHost(t testing.TB, opts ...winsim.Options) *simHost {
	t.Helper()
	var o winsim.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.BootDelay = 200 * time.Millisecond
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h, key := fixture.SimHost(t, o)
	return &simHost{Host: h, signer: key.Signer}
}

func newSigner(t testing.TB) ssh.Signer { return fixture.NewKey(t).Signer }

// options reaches the host as the operator does.
func (h *simHost) options() Options {
	return Options{Address: h.IP(), Port: h.Port(), User: h.User(), Signer: h.signer, DialTimeout: 10 * time.Second}
}

// installFakeAgent puts this test binary on the host as fakeAgentPath.
func (h *simHost) installFakeAgent(t testing.TB) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst, err := h.Path(fakeAgentPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(self, dst); err != nil {
		data, err := os.ReadFile(self)
		if err == nil {
			err = os.WriteFile(dst, data, 0o755)
		}
		if err != nil {
			t.Fatalf("install the fake agent as %s: %v", fakeAgentPath, err)
		}
	}
}
