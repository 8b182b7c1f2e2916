package host

import (
	"fmt"
	"strings"

	"github.com/winnode/winnode/internal/plan"
)

// The errors below are returned as pointers and are meant for errors.As, so
// that callers can tell the causes apart: the operator sets condition
// Reachable=False for an *UnreachableError, HostKeyMismatch for a
// *HostKeyMismatchError, counts SSH failures for both and for an *AuthError,
// and reports an *AgentError's code.

// UnreachableError: the host did not answer, refused the connection, timed
// out, or dropped the connection before it could be used.
type UnreachableError struct {
	Address string // host:port
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("host %s is unreachable over SSH: %v (check that the host is up, that OpenSSH Server runs and that the port is open)", e.Address, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// AddressNotAllowedError: the address (or what its name resolves to) is
// one the caller's policy refuses to connect to; nothing was sent to it.
type AddressNotAllowedError struct {
	Address string // host:port
	Err     error
}

func (e *AddressNotAllowedError) Error() string {
	return fmt.Sprintf("not connecting to %s: %v", e.Address, e.Err)
}

func (e *AddressNotAllowedError) Unwrap() error { return e.Err }

// AuthError: the host's SSH server refused the private key for the user.
type AuthError struct {
	Address string
	User    string
	// KeyFingerprint is the SHA256 fingerprint of the public key offered.
	KeyFingerprint string
	Err            error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("host %s refused SSH public key %s for user %q: %v (add the public key to the host's administrators_authorized_keys, or check the user name)",
		e.Address, e.KeyFingerprint, e.User, e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// HostKeyMismatchError: the host presented a key other than the pinned one.
// Nothing was sent to the host beyond the key exchange: no authentication was
// attempted.
type HostKeyMismatchError struct {
	Address string
	// PinnedFingerprint and PresentedFingerprint are SHA256 fingerprints
	// ("SHA256:...").
	PinnedFingerprint    string
	PresentedFingerprint string
	// PresentedKey is the presented key in authorized_keys form, for an
	// administrator who decides to trust it.
	PresentedKey string
	// When the host no longer has a key of the pinned type at all, nothing
	// is presented: PinnedType is the pinned key's type and OfferedTypes
	// the host key algorithms the host offers instead.
	PinnedType   string
	OfferedTypes []string
}

func (e *HostKeyMismatchError) Error() string {
	const advice = "the host was reinstalled or someone is in the middle; if the change is expected, clear the pinned key"
	if e.PresentedFingerprint == "" {
		return fmt.Sprintf("host %s has no %s host key any more (it offers %s), but %s is pinned: %s",
			e.Address, e.PinnedType, strings.Join(e.OfferedTypes, ", "), e.PinnedFingerprint, advice)
	}
	return fmt.Sprintf("host %s presented SSH host key %s, but %s is pinned: %s",
		e.Address, e.PresentedFingerprint, e.PinnedFingerprint, advice)
}

// AgentError: the agent ran and failed with its machine-readable error.
// errors.As(err, new(*plan.Error)) reaches the agent's error (its Code,
// Service, File).
type AgentError struct {
	Address  string
	Command  string // the agent's command line, e.g. `C:\k\winnode-agent.exe apply --plan ...`
	ExitCode int
	Err      plan.Error
	// Result is what the agent did before it failed, when it says so.
	Result *plan.Result
	// StderrTail is the end of the agent's log output (bounded).
	StderrTail string
}

func (e *AgentError) Error() string {
	return fmt.Sprintf("host %s: %s failed (exit code %d): %v", e.Address, e.Command, e.ExitCode, &e.Err)
}

func (e *AgentError) Unwrap() error { return &e.Err }

// ProgramNotFoundError: the host's shell could not find the program (cmd.exe:
// "is not recognized as an internal or external command"). For the agent
// this means it has not been uploaded yet, or was removed.
type ProgramNotFoundError struct {
	Address string
	Program string
	Output  string // what the shell said (bounded)
}

func (e *ProgramNotFoundError) Error() string {
	return fmt.Sprintf("host %s: program %s does not exist on the host (the shell said %q): upload it first", e.Address, e.Program, e.Output)
}

// NonsenseError: a program answered with something that is not the one JSON
// document it promises (garbage, nothing, several documents, a crash trace).
type NonsenseError struct {
	Address  string
	Command  string
	ExitCode int
	// Problem says what is wrong with the answer.
	Problem string
	// StdoutPrefix and StderrTail quote the answer (bounded).
	StdoutPrefix string
	StderrTail   string
}

func (e *NonsenseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "host %s answered nonsense to %s (exit code %d): %s; stdout begins %q", e.Address, e.Command, e.ExitCode, e.Problem, e.StdoutPrefix)
	if e.StderrTail != "" {
		fmt.Fprintf(&b, "; stderr ends %q", e.StderrTail)
	}
	b.WriteString(" (is the agent on the host the version the operator expects?)")
	return b.String()
}

// OutputTooLargeError: a program printed more on stdout than Run keeps.
type OutputTooLargeError struct {
	Address string
	Command string
	Limit   int
}

func (e *OutputTooLargeError) Error() string {
	return fmt.Sprintf("host %s: %s answered with more than %d bytes on stdout, the most winnode reads of a host's answer: it was cut off there and nothing of the answer is used",
		e.Address, e.Command, e.Limit)
}

// prefix returns at most n bytes of b (cut on a byte boundary; %q quoting
// makes any cut printable).
func prefix(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// tail returns at most the last n bytes of b.
func tail(b []byte, n int) string {
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}
