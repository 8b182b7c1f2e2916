package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/plan"
)

var agentArgv = []string{`C:\k\winnode-agent.exe`, "info"}

func TestDecodeAnswer(t *testing.T) {
	t.Run("success", func(t *testing.T) {
		var info plan.Info
		err := decodeAnswer("10.0.0.5:22", agentArgv, []byte(`{"schemaVersion":"v1","hostname":"WIN-A","future":1}`+"\r\n"), nil, 0, &info)
		if err != nil {
			t.Fatalf("decodeAnswer: %v", err)
		}
		if info.Hostname != "WIN-A" {
			t.Errorf("hostname = %q, want WIN-A", info.Hostname)
		}
	})
	t.Run("success, answer not wanted", func(t *testing.T) {
		if err := decodeAnswer("h:22", agentArgv, []byte(`{}`), nil, 0, nil); err != nil {
			t.Fatalf("decodeAnswer: %v", err)
		}
		var ne *NonsenseError
		if err := decodeAnswer("h:22", agentArgv, []byte(`oops`), nil, 0, nil); !errors.As(err, &ne) {
			t.Fatalf("garbage with v=nil: got %v, want *NonsenseError", err)
		}
	})
	t.Run("agent error", func(t *testing.T) {
		doc := `{"schemaVersion":"v1","error":{"code":"FileMissing","message":"not staged","file":"C:\\k\\kubelet.exe"},"result":{"command":"apply","services":[],"files":[]}}`
		err := decodeAnswer("10.0.0.5:22", agentArgv, []byte(doc), []byte("log line\n"), 3, new(plan.Result))
		var ae *AgentError
		if !errors.As(err, &ae) {
			t.Fatalf("got %T %v, want *AgentError", err, err)
		}
		if ae.ExitCode != 3 || ae.Err.Code != plan.ErrFileMissing || ae.Err.File != `C:\k\kubelet.exe` || ae.Result == nil || ae.Result.Command != "apply" {
			t.Errorf("AgentError = %+v", ae)
		}
		var pe *plan.Error
		if !errors.As(err, &pe) || pe.Code != plan.ErrFileMissing {
			t.Errorf("errors.As(*plan.Error) = %v", pe)
		}
		for _, want := range []string{"10.0.0.5:22", "FileMissing", `C:\k\kubelet.exe`, "exit code 3"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not name %q", err, want)
			}
		}
	})
	t.Run("program missing", func(t *testing.T) {
		stderr := "'C:\\k\\winnode-agent.exe' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n"
		err := decodeAnswer("10.0.0.5:22", agentArgv, nil, []byte(stderr), 1, nil)
		var pe *ProgramNotFoundError
		if !errors.As(err, &pe) || pe.Program != `C:\k\winnode-agent.exe` {
			t.Fatalf("got %v, want *ProgramNotFoundError for the agent", err)
		}
	})
	nonsense := []struct {
		name           string
		stdout, stderr string
		code           int
		want           string
	}{
		{"garbage", "Hello from PowerShell\r\n", "", 0, "not one JSON document"},
		{"nothing", "", "", 0, "printed nothing"},
		{"two documents", `{"a":1}{"b":2}`, "", 0, "more data follows"},
		{"wrong type", `[1,2]`, "", 0, "not one JSON document"},
		{"failed without JSON", "", "panic: runtime error\n", 2, "without the agent's JSON error"},
		{"failed with JSON but no code", `{"schemaVersion":"v1"}`, "", 1, "no error code"},
		{"huge garbage", strings.Repeat("x", 100000), strings.Repeat("y", 100000), 1, "stdout begins"},
	}
	for _, tc := range nonsense {
		t.Run(tc.name, func(t *testing.T) {
			err := decodeAnswer("10.0.0.5:22", agentArgv, []byte(tc.stdout), []byte(tc.stderr), tc.code, new(plan.Info))
			var ne *NonsenseError
			if !errors.As(err, &ne) {
				t.Fatalf("got %T %v, want *NonsenseError", err, err)
			}
			msg := err.Error()
			for _, want := range []string{"10.0.0.5:22", "answered nonsense", tc.want} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			if len(msg) > 2000 {
				t.Errorf("message is %d bytes; the quoted output must be bounded", len(msg))
			}
		})
	}
}

// FuzzDecodeAnswer: whatever a host prints, the decoder returns a value or
// a typed error, never panics, and quotes a bounded amount.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":"v1","hostname":"WIN-A","ipv4":["10.0.0.5"],"installedPlan":{"version":"1","files":{"C:\\k\\a":"00"},"complete":true}}`), []byte(""), 0)
	f.Add([]byte(`{"schemaVersion":"v1","error":{"code":"Service","message":"boom","service":"kubelet"}}`), []byte("log\n"), 1)
	f.Add([]byte(`{"schemaVersion":"v1","error":{"code":"Service"},"result":{"services":[{"name":"x"}]}}`), []byte(""), 5)
	f.Add([]byte(""), []byte("'x' is not recognized as an internal or external command"), 1)
	f.Add([]byte("\xff\xfe{"), []byte("\x00"), 0)
	f.Add([]byte(`{"a":1} trailing`), []byte(""), 0)
	f.Add([]byte(`null`), []byte(""), 1)
	f.Fuzz(func(t *testing.T, stdout, stderr []byte, code int) {
		var info plan.Info
		err := decodeAnswer("h:22", agentArgv, stdout, stderr, code, &info)
		if err == nil {
			if code != 0 {
				t.Fatalf("exit code %d decoded as success", code)
			}
			return
		}
		var (
			ae *AgentError
			pe *ProgramNotFoundError
			ne *NonsenseError
		)
		switch {
		case errors.As(err, &ae), errors.As(err, &pe):
			if code == 0 {
				t.Fatalf("exit code 0 turned into %v", err)
			}
		case errors.As(err, &ne):
		default:
			t.Fatalf("untyped error %T: %v", err, err)
		}
		if !strings.Contains(err.Error(), "h:22") {
			t.Fatalf("error does not name the host: %v", err)
		}
		if len(err.Error()) > 4*quoteLimit*4+1000 {
			t.Fatalf("error is %d bytes long", len(err.Error()))
		}
	})
}
