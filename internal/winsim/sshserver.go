package winsim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/winexec"
)

// serverVersion is what Windows Server's built-in OpenSSH announces.
const serverVersion = "SSH-2.0-OpenSSH_for_Windows_8.1"

// trackedConn is one SSH connection: shaped by the host's link settings and
// remembered so that faults can drop it.
type trackedConn struct {
	net.Conn
	host *Host
	once sync.Once
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.host.counters.bytesIn.Add(int64(n))
		c.host.link.delay(n)
	}
	return n, err
}

func (c *trackedConn) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := min(len(p), linkChunk)
		c.host.link.delay(chunk)
		n, err := c.Conn.Write(p[:chunk])
		c.host.counters.bytesOut.Add(int64(n))
		written += n
		if err != nil {
			return written, err
		}
		p = p[chunk:]
	}
	return written, nil
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.host.mu.Lock()
		delete(c.host.conns, c)
		c.host.mu.Unlock()
	})
	return c.Conn.Close()
}

func (h *Host) acceptLoop(ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			h.log.Warn("simulated host: accepting an SSH connection failed", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		c := &trackedConn{Conn: nc, host: h}
		h.mu.Lock()
		if !h.up {
			h.mu.Unlock()
			nc.Close()
			continue
		}
		h.conns[c] = struct{}{}
		h.mu.Unlock()
		go h.serveConn(c)
	}
}

// serverConfig is built per connection so that a rotated host key applies
// to the next connection.
func (h *Host) serverConfig() *ssh.ServerConfig {
	cfg := &ssh.ServerConfig{
		ServerVersion:     serverVersion,
		PublicKeyCallback: h.checkKey,
		MaxAuthTries:      6,
	}
	h.mu.Lock()
	cfg.AddHostKey(h.signer)
	h.mu.Unlock()
	return cfg
}

// checkKey accepts the user (case-insensitively, as Windows compares account
// names, optionally as HOSTNAME\user) when the key is listed in
// administrators_authorized_keys, read afresh on every attempt.
func (h *Host) checkKey(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	user := meta.User()
	if i := strings.LastIndexByte(user, '\\'); i >= 0 {
		if !strings.EqualFold(user[:i], h.id.Hostname) && user[:i] != "." {
			return nil, fmt.Errorf("simulated host: unknown domain in user %q", user)
		}
		user = user[i+1:]
	}
	if !strings.EqualFold(user, h.opts.User) {
		return nil, fmt.Errorf("simulated host: user %q may not log in", meta.User())
	}
	file, err := h.Path(AuthorizedKeysPath)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("simulated host: no authorized keys: %w", err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // Notepad's UTF-8 byte order mark
	want := key.Marshal()
	for len(bytes.TrimSpace(data)) > 0 {
		pub, _, _, rest, err := ssh.ParseAuthorizedKey(data)
		if err != nil {
			break
		}
		if bytes.Equal(pub.Marshal(), want) {
			return &ssh.Permissions{Extensions: map[string]string{"pubkey-fp": ssh.FingerprintSHA256(key)}}, nil
		}
		data = rest
	}
	return nil, fmt.Errorf("simulated host: key %s is not authorized for %s", ssh.FingerprintSHA256(key), meta.User())
}

func (h *Host) serveConn(c *trackedConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // handshake
	sconn, chans, reqs, err := ssh.NewServerConn(c, h.serverConfig())
	if err != nil {
		h.log.Info("simulated host: SSH handshake refused", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	_ = c.SetDeadline(time.Time{})
	h.counters.connections.Add(1)
	h.log.Info("simulated host: SSH login", "user", sconn.User(), "key", sconn.Permissions.Extensions["pubkey-fp"], "remote", c.RemoteAddr().String())
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	for nch := range chans {
		if nch.ChannelType() != "session" {
			_ = nch.Reject(ssh.UnknownChannelType, "the simulated host only opens sessions")
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			continue
		}
		h.counters.sessions.Add(1)
		s := &session{host: h, ch: ch, reqs: creqs}
		wg.Add(1)
		go func() { defer wg.Done(); s.serve() }()
	}
	// The connection is gone; each session ends what it still runs, as
	// Windows OpenSSH does with the job object of a session.
	sconn.Close()
	wg.Wait()
}

// session is one SSH session channel: exec, the sftp subsystem or a shell.
type session struct {
	host *Host
	ch   ssh.Channel
	reqs <-chan *ssh.Request
	env  []string

	mu      sync.Mutex
	proc    *os.Process
	exe     os.FileInfo // the running program's file, as it was when started
	started bool        // a session runs one exec, subsystem or shell
	done    bool
}

// begin marks the session as running its one program; false if it already
// does.
func (s *session) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return false
	}
	s.started = true
	return true
}

func (s *session) serve() {
	defer s.ch.Close()
	for req := range s.reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil && !strings.HasPrefix(kv.Name, "WINSIM_") {
				s.env = append(s.env, kv.Name+"="+kv.Value)
			}
			reply(req, true)
		case "pty-req", "window-change":
			reply(req, false)
		case "exec":
			var cmd struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &cmd); err != nil {
				reply(req, false)
				continue
			}
			if !s.begin() {
				reply(req, false)
				continue
			}
			reply(req, true)
			s.host.counters.execs.Add(1)
			go func() { s.finish(s.exec(cmd.Command)) }()
		case "subsystem":
			var sub struct{ Name string }
			if err := ssh.Unmarshal(req.Payload, &sub); err != nil || sub.Name != "sftp" {
				reply(req, false)
				continue
			}
			if !s.begin() {
				reply(req, false)
				continue
			}
			reply(req, true)
			s.host.counters.sftp.Add(1)
			go func() { s.finish(s.sftp()) }()
		case "shell":
			if !s.begin() {
				reply(req, false)
				continue
			}
			reply(req, true)
			go func() {
				fmt.Fprint(s.ch.Stderr(), "This is a simulated Windows host (winsim): interactive shells are not simulated.\r\nRun one program instead, for example: ssh Administrator@host C:\\k\\winnode-agent.exe info\r\n")
				s.finish(1)
			}()
		default:
			reply(req, false)
		}
	}
	// The channel is closed (client left or the connection dropped).
	s.kill()
}

func reply(req *ssh.Request, ok bool) {
	if req.WantReply {
		_ = req.Reply(ok, nil)
	}
}

// finish sends the exit status and closes the channel.
func (s *session) finish(code int) {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	status := make([]byte, 4)
	binary.BigEndian.PutUint32(status, uint32(code))
	_, _ = s.ch.SendRequest("exit-status", false, status)
	_ = s.ch.CloseWrite()
	_ = s.ch.Close()
}

func (s *session) kill() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		_ = winexec.KillGroup(p)
	}
}

// exec runs one program as cmd.exe /c would and returns its exit code.
func (s *session) exec(cmdline string) int {
	h := s.host
	home, _ := winpath.Parse(h.Profile())
	if prog, path, args, ok := h.systemProgram(home, cmdline); ok {
		h.auditExec(home, cmdline)
		h.log.Info("simulated host: exec of the simulated host's own program", "program", path.String())
		return prog(h.systemEnv(home, s.ch, s.ch, s.ch.Stderr()), args)
	}
	cmd, stdin, err := s.start(home, cmdline)
	if err != nil {
		return 1
	}
	h.auditExec(home, cmdline)
	s.mu.Lock()
	s.proc = cmd.Process
	s.exe, _ = os.Stat(cmd.Path)
	s.mu.Unlock()
	h.trackSession(s, true)
	defer h.trackSession(s, false)
	h.log.Info("simulated host: exec", "program", firstWord(cmdline), "pid", cmd.Process.Pid)
	go func() {
		_, _ = io.Copy(stdin, s.ch)
		_ = stdin.Close()
	}()
	_ = cmd.Wait()
	s.mu.Lock()
	s.proc = nil
	s.mu.Unlock()
	code := 1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if code < 0 { // ended by a signal: Windows reports TerminateProcess's code 1
		code = 1
	}
	return code
}

// start starts cmdline's program with the session's input and output, or
// writes why it cannot to the session's stderr.
//
// Linux refuses to run a file that some process holds open for writing
// (ETXTBSY). The simulator's own SFTP server writes uploaded programs, and
// a process this one forks meanwhile (another host's program) inherits
// that descriptor until its exec closes it (golang.org/issue/22315), so a
// program uploaded a moment ago can be refused although its upload was
// closed. Windows has no such window; the start is tried again briefly.
func (s *session) start(cwd winpath.Path, cmdline string) (*exec.Cmd, io.WriteCloser, error) {
	h := s.host
	for attempt := 0; ; attempt++ {
		cmd, err := winexec.Command(h.execHost(), cwd, cmdline, s.env)
		if err != nil {
			h.log.Info("simulated host: exec refused", "command", firstWord(cmdline), "err", err)
			fmt.Fprintf(s.ch.Stderr(), "%s\r\n", err)
			return nil, nil, err
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			fmt.Fprintf(s.ch.Stderr(), "simulated host: %v\r\n", err)
			return nil, nil, err
		}
		cmd.Stdout = s.ch
		cmd.Stderr = s.ch.Stderr()
		cmd.WaitDelay = 2 * time.Second
		err = cmd.Start()
		if err == nil {
			return cmd, stdin, nil
		}
		stdin.Close()
		if !errors.Is(err, syscall.ETXTBSY) || attempt >= 40 {
			fmt.Fprintf(s.ch.Stderr(), "simulated host: starting %s: %v\r\n", firstWord(cmdline), err)
			return nil, nil, err
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func firstWord(cmdline string) string {
	args := wincmd.Split(cmdline)
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

func (h *Host) trackSession(s *session, add bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if add {
		h.sessions[s] = struct{}{}
	} else {
		delete(h.sessions, s)
	}
}

// inUse says whether a program running on the host (a service or a program
// started over SSH) is the file at linuxPath.
func (h *Host) inUse(linuxPath string) bool {
	fi, err := os.Stat(linuxPath)
	if err != nil {
		return false
	}
	exes := h.scm.Executables()
	h.mu.Lock()
	for s := range h.sessions {
		s.mu.Lock()
		if s.proc != nil && s.exe != nil {
			exes = append(exes, s.exe)
		}
		s.mu.Unlock()
	}
	h.mu.Unlock()
	for _, e := range exes {
		if os.SameFile(fi, e) {
			return true
		}
	}
	return false
}

// killSessions ends every program started over SSH.
func (h *Host) killSessions() {
	h.mu.Lock()
	var all []*session
	for s := range h.sessions {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		s.kill()
	}
}

// sftp serves the SFTP subsystem over the host's filesystem.
func (s *session) sftp() int {
	fs := &hostFS{host: s.host}
	home := winpathSFTP(s.host.Profile())
	ch := &sftpChannel{Channel: s.ch}
	srv := sftp.NewRequestServer(ch, sftp.Handlers{FileGet: fs, FilePut: fs, FileCmd: fs, FileList: fs},
		sftp.WithStartDirectory(home))
	err := srv.Serve()
	_ = srv.Close()
	ch.stop()
	if err != nil && !errors.Is(err, io.EOF) {
		return 1
	}
	return 0
}

// sftpChannel is the session's channel as the SFTP server writes to it.
// pkg/sftp's packet manager may still send a response after Serve has
// returned (a transfer the client cut off), while finish closes the
// channel for writing; x/crypto/ssh's channel does not order those two.
// Once stop is called, writes fail instead of reaching the channel.
type sftpChannel struct {
	ssh.Channel
	mu      sync.Mutex
	stopped bool
}

func (c *sftpChannel) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return 0, io.ErrClosedPipe
	}
	return c.Channel.Write(p)
}

func (c *sftpChannel) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

func winpathSFTP(p string) string {
	parsed, err := winpath.Parse(p)
	if err != nil {
		return "/C:/"
	}
	return parsed.SFTP()
}

// DropConnections closes every SSH connection to the host, as a network
// failure would. Programs started over those connections end.
func (h *Host) DropConnections() {
	h.mu.Lock()
	var all []*trackedConn
	for c := range h.conns {
		all = append(all, c)
	}
	h.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
	if len(all) > 0 {
		h.log.Info("simulated host: dropped SSH connections", "count", len(all))
	}
}
