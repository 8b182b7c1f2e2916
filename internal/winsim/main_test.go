package winsim

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/simscm"
)

// helperName is the name under which the test binary, copied into a
// simulated host, acts as a small program (see helperMain) instead of
// running the tests.
const helperName = "helper.exe"

func TestMain(m *testing.M) {
	if strings.EqualFold(filepath.Base(os.Args[0]), helperName) {
		os.Exit(helperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperMain is the program the tests run on simulated hosts:
//
//	json ARGS...   print {"args":[...],"root":...,"scm":...,"cwd":...} on stdout
//	cat            copy stdin to stdout
//	fail CODE MSG  print MSG on stderr, exit CODE
//	serve NAME     answer the service control manager when started as a service,
//	               print "NAME started" and run until SIGTERM/SIGINT ("NAME stopping")
//	silent         run until killed without answering the service control manager
//	dispatch       ask to answer the service control manager, print the outcome
//	child-dispatch start `helper.exe dispatch` as a child, then run as silent does
func helperMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no command")
		return 2
	}
	switch args[0] {
	case "json":
		cwd, _ := os.Getwd()
		_ = json.NewEncoder(os.Stdout).Encode(map[string]any{
			"args": args[1:], "root": os.Getenv("WINSIM_ROOT"), "scm": os.Getenv("WINSIM_SCM"),
			"cwd": cwd, "computername": os.Getenv("COMPUTERNAME"), "custom": os.Getenv("CUSTOM"),
		})
		return 0
	case "cat":
		_, _ = io.Copy(os.Stdout, os.Stdin)
		return 0
	case "fail":
		code, _ := strconv.Atoi(args[1])
		fmt.Fprintln(os.Stderr, strings.Join(args[2:], " "))
		return code
	case "silent":
		block()
	case "dispatch":
		err := simscm.Dial(os.Getenv(simscm.EnvSocket)).ConnectDispatcher(context.Background())
		fmt.Println("dispatch:", err)
		return 0
	case "child-dispatch":
		child := exec.Command(os.Args[0], "dispatch")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		_ = child.Run()
		block()
	case "serve":
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		// A service's process answers the service control manager first
		// (StartServiceCtrlDispatcher); run from SSH it is not a service.
		if err := simscm.Dial(os.Getenv(simscm.EnvSocket)).ConnectDispatcher(context.Background()); err != nil && !errors.Is(err, simscm.ErrControllerConnect) {
			fmt.Fprintln(os.Stderr, "helper: answering the service control manager:", err)
			return 1
		}
		fmt.Println(args[1], "started", os.Getpid())
		<-sig
		fmt.Println(args[1], "stopping")
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown command", args[0])
	return 2
}

// block runs until the process is killed. Not `select {}`: with no other
// goroutine, Go's runtime ends that at once ("all goroutines are asleep -
// deadlock!", exit code 2), and the service would seem to have crashed.
func block() {
	for {
		time.Sleep(time.Hour)
	}
}

// testHost is a started simulated host and a key it accepts.
type testHost struct {
	*Host
	signer ssh.Signer
	key    ed25519.PrivateKey
}

func newTestHost(t *testing.T, opts Options) *testHost {
	t.Helper()
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	if opts.BootDelay == 0 {
		opts.BootDelay = 200 * time.Millisecond
	}
	h, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := h.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	if err := h.AuthorizeKey(signer.PublicKey()); err != nil {
		t.Fatalf("AuthorizeKey: %v", err)
	}
	return &testHost{Host: h, signer: signer, key: priv}
}

// installHelper puts the test binary on the host as windowsPath.
func installHelper(t *testing.T, h *Host, windowsPath string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst, err := h.Path(windowsPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(self, dst); err != nil {
		if err := copyIfChanged(self, dst); err != nil {
			t.Fatalf("installing the helper as %s: %v", windowsPath, err)
		}
	}
}

func (th *testHost) dial(t *testing.T) *ssh.Client {
	t.Helper()
	c, err := ssh.Dial("tcp", th.Addr(), &ssh.ClientConfig{
		User:            "Administrator",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(th.signer)},
		HostKeyCallback: ssh.FixedHostKey(th.HostKey()),
		Timeout:         10 * time.Second,
	})
	if err != nil {
		t.Fatalf("ssh to simulated host %s: %v", th.Addr(), err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// run runs a command line over a new session and returns stdout, stderr
// and the exit code.
func run(t *testing.T, c *ssh.Client, cmdline, stdin string) (string, string, int) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	defer s.Close()
	var out, errOut strings.Builder
	s.Stdout, s.Stderr, s.Stdin = &out, &errOut, strings.NewReader(stdin)
	err = s.Run(cmdline)
	code := 0
	if ee, ok := err.(*ssh.ExitError); ok {
		code = ee.ExitStatus()
	} else if err != nil {
		t.Fatalf("running %q: %v", cmdline, err)
	}
	return out.String(), errOut.String(), code
}

var fixedTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func newSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
