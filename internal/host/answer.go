package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/wincmd"
)

// quoteLimit bounds how much of a bad answer an error quotes.
const quoteLimit = 256

// RunAgent runs the agent (agentPath, e.g. `C:\k\winnode-agent.exe`) with
// args and decodes the one JSON document it prints on stdout into v (a
// *plan.Info, *plan.Result, ...).
//
// On a non-zero exit the agent's error document becomes an *AgentError
// (errors.As reaches its *plan.Error); a missing agent is a
// *ProgramNotFoundError; anything else the host prints instead of the
// promised JSON is a *NonsenseError. Transport failures are as for Run.
func (c *Client) RunAgent(ctx context.Context, agentPath string, args []string, stdin io.Reader, v any) error {
	argv := append([]string{agentPath}, args...)
	stdout, stderr, code, err := c.Run(ctx, argv, stdin)
	if err != nil {
		return err
	}
	return decodeAnswer(c.address, argv, stdout, stderr, code, v)
}

// decodeAnswer turns what a program printed and its exit code into v or a
// typed error. It must never panic, whatever the host sends (fuzzed).
func decodeAnswer(address string, argv []string, stdout, stderr []byte, exitCode int, v any) error {
	cmdline := wincmd.Join(argv...)
	nonsense := func(problem string) error {
		return &NonsenseError{
			Address:      address,
			Command:      cmdline,
			ExitCode:     exitCode,
			Problem:      problem,
			StdoutPrefix: prefix(stdout, quoteLimit),
			StderrTail:   tail(stderr, quoteLimit),
		}
	}

	if exitCode != 0 {
		if len(bytes.TrimSpace(stdout)) == 0 && notRecognized(stderr) {
			return &ProgramNotFoundError{Address: address, Program: argv[0], Output: prefix(bytes.TrimSpace(stderr), quoteLimit)}
		}
		var doc plan.ErrorDocument
		if err := decodeOne(stdout, &doc); err != nil {
			return nonsense(fmt.Sprintf("it failed without the agent's JSON error document (%v)", err))
		}
		if doc.Error.Code == "" {
			return nonsense("it failed, and its JSON document has no error code")
		}
		return &AgentError{
			Address:    address,
			Command:    cmdline,
			ExitCode:   exitCode,
			Err:        doc.Error,
			Result:     doc.Result,
			StderrTail: tail(stderr, quoteLimit*4),
		}
	}
	if v == nil {
		v = new(json.RawMessage) // the caller wants no answer, but it must still be JSON
	}
	if err := decodeOne(stdout, v); err != nil {
		return nonsense(fmt.Sprintf("its stdout is not one JSON document (%v)", err))
	}
	return nil
}

// decodeOne decodes exactly one JSON value from b. Unknown fields are
// allowed (a newer agent may add some); a second value or other trailing
// data is not.
func decodeOne(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("it printed nothing")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more data follows the JSON document")
	}
	return nil
}

// notRecognized reports whether stderr is the shell's "no such program"
// message: cmd.exe says "'x' is not recognized as an internal or external
// command", PowerShell "The term 'x' is not recognized as the name of a
// cmdlet".
func notRecognized(stderr []byte) bool {
	s := strings.ToLower(string(stderr))
	return strings.Contains(s, "is not recognized as")
}
