package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// Exit codes of winnode-agent.
const (
	ExitOK     = 0 // success: the command's document is on stdout
	ExitFailed = 1 // the command failed: a plan.ErrorDocument is on stdout
	ExitUsage  = 2 // bad command line: a plan.ErrorDocument with code Usage
)

// WriteJSON prints one JSON document (indented, newline-terminated).
func WriteJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// Fail prints the error document for err (with the partial result, if any)
// and returns the exit code.
func Fail(w io.Writer, err error, partial *plan.Result) int {
	code := plan.ErrHost
	var e *plan.Error
	if errors.As(err, &e) {
		code = e.Code
	}
	doc := plan.ErrorDocument{SchemaVersion: plan.SchemaVersion, Error: *plan.AsError(err, code), Result: partial}
	WriteJSON(w, doc)
	if doc.Error.Code == plan.ErrUsage {
		return ExitUsage
	}
	return ExitFailed
}

// ReadHostFile reads a file named on the agent's command line: "-" is
// standard input, an absolute Windows path (`C:\k\plan.json`) is a host path
// (mapped through the platform), anything else a path relative to the
// working folder.
func ReadHostFile(p Platform, name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(stdin, 64<<20))
	}
	local := name
	if wp, err := winpath.Parse(name); err == nil {
		if local, err = p.LocalPath(wp); err != nil {
			return nil, err
		}
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return data, nil
}

// ApplyFile reads a plan named on the command line (see ReadHostFile),
// decodes it strictly and applies it. A plan the operator staged like any
// blob (in the plan's staging folder) is consumed too: it is deleted after
// a successful apply, with the other blobs.
func (a *Agent) ApplyFile(ctx context.Context, name string, stdin io.Reader) (*plan.Result, error) {
	data, err := ReadHostFile(a.Platform, name, stdin)
	if err != nil {
		return nil, plan.Errorf(plan.ErrPlanInvalid, "%v", err)
	}
	p, err := plan.Decode(data)
	if err != nil {
		return nil, plan.Errorf(plan.ErrPlanInvalid, "%s: %v", name, err)
	}
	res, err := a.Apply(ctx, p)
	if err != nil {
		return res, err
	}
	if wp, perr := winpath.Parse(name); perr == nil {
		if staging, serr := winpath.Parse(p.Staging()); serr == nil && wp.Dir().Equal(staging) {
			if local, lerr := a.Platform.LocalPath(wp); lerr == nil {
				os.Remove(local)
				if dir, derr := a.Platform.LocalPath(staging); derr == nil {
					os.Remove(dir) // only when empty
				}
			}
		}
	}
	return res, nil
}
