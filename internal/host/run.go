package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/wincmd"
)

// stderrKeep is how much of a program's stderr (its log) Run keeps: the end,
// where the reason for a failure is.
const stderrKeep = 64 << 10

// Run runs exactly one program on the host and waits for it. args[0] is the
// program (a full Windows path); the command line is built with wincmd.Join.
//
// A program that ran returns its exit code with a nil error, whatever the
// code. err is set when the program could not be run to the end: the
// connection failed, ctx ended (the session is closed), an argument is
// unsafe, or stdout exceeded Options.MaxOutput (*OutputTooLargeError).
// stdout is kept whole up to that bound; stderr keeps its last 64 KiB.
//
// stdin may be nil. Nothing passed in or printed is logged: plans and
// answers can hold tokens.
func (c *Client) Run(ctx context.Context, args []string, stdin io.Reader) (stdout, stderr []byte, exitCode int, err error) {
	cmdline, err := commandLine(args)
	if err != nil {
		return nil, nil, -1, fmt.Errorf("host %s: %w", c.address, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, -1, fmt.Errorf("host %s: run %s: %w", c.address, cmdline, err)
	}
	session, err := c.ssh.NewSession()
	if err != nil {
		return nil, nil, -1, &UnreachableError{Address: c.address, Err: fmt.Errorf("open a session to run %s: %w", cmdline, err)}
	}
	defer session.Close()

	// A host that answers more than maxOutput is cut off at once: reading
	// on to the end would let it hold this connection as long as it likes.
	out := &headBuffer{max: c.maxOutput, full: func() { _ = session.Close() }}
	errOut := &tailBuffer{max: stderrKeep}
	session.Stdout = out
	session.Stderr = errOut
	if stdin != nil {
		session.Stdin = stdin
	}

	stop := context.AfterFunc(ctx, func() {
		_ = session.Signal(ssh.SIGKILL)
		_ = session.Close()
	})
	runErr := session.Run(cmdline)
	stop()

	stdout, stderr = out.Bytes(), errOut.Bytes()
	if out.overflow {
		return stdout, stderr, -1, &OutputTooLargeError{Address: c.address, Command: cmdline, Limit: c.maxOutput}
	}
	if ctx.Err() != nil {
		return stdout, stderr, -1, fmt.Errorf("host %s: run %s: stopped: %w", c.address, cmdline, context.Cause(ctx))
	}
	var exitErr *ssh.ExitError
	switch {
	case runErr == nil:
		exitCode = 0
	case errors.As(runErr, &exitErr):
		exitCode = exitErr.ExitStatus()
	default:
		// ExitMissingError, io.EOF and the like: the connection went away
		// before the program's exit status arrived.
		return stdout, stderr, -1, &UnreachableError{Address: c.address, Err: fmt.Errorf("run %s: the connection ended before the program did: %w", cmdline, runErr)}
	}
	return stdout, stderr, exitCode, nil
}

// commandLine checks and joins the arguments.
//
// On Windows, OpenSSH hands the command line to the host's default shell
// (cmd.exe /c or PowerShell -c), and each treats its own characters
// specially: cmd.exe expands %VAR% and obeys & | < > ^ even inside quotes in
// some cases, and strips an outer pair of quotes; PowerShell expands $x,
// @x, `, ~ and treats ; , ( ) { } and a quoted program name as syntax. No
// quoting is right for both, so arguments are limited to characters that
// neither shell interprets; data that needs more goes in a file or on stdin.
func commandLine(args []string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("run: no program given")
	}
	for i, a := range args {
		if a == "" {
			return "", fmt.Errorf("run %s: argument %d is empty, which PowerShell drops: pass a value", args[0], i)
		}
		for _, r := range a {
			if !safeArgRune(r) {
				return "", fmt.Errorf("run %s: argument %d (%q) contains %q, which the host's shell (cmd.exe or PowerShell) would interpret: pass such data in a file or on stdin", args[0], i, a, r)
			}
		}
	}
	return wincmd.Join(args...), nil
}

// CheckArgs says whether Run accepts args, without running anything: for
// a caller that must know before it uploads what it will run.
func CheckArgs(args ...string) error {
	_, err := commandLine(args)
	return err
}

func safeArgRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune(`\/:._-=+`, r)
}

// headBuffer keeps the first max bytes written, notes whether more came,
// and then calls full once.
type headBuffer struct {
	buf      bytes.Buffer
	max      int
	overflow bool
	full     func()
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		if !b.overflow && b.full != nil {
			b.full()
		}
		b.overflow = true
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

func (b *headBuffer) Bytes() []byte { return b.buf.Bytes() }

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) Bytes() []byte {
	if len(b.buf) > b.max {
		return b.buf[len(b.buf)-b.max:]
	}
	return b.buf
}
