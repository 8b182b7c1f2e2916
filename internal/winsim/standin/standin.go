// Package standin holds the simulated Windows programs that run on winsim
// hosts in place of kubelet.exe, kube-proxy.exe, containerd.exe,
// flanneld.exe, hybrid-overlay-node.exe, csi-proxy.exe and
// windows_exporter.exe. One Linux binary (cmd/winsim-standin) carries them all and
// picks one by the
// name it was started under. Each validates its flags as the real program
// does and says in its log that it is simulated.
package standin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/winpath"
)

// Program names the stand-in answers to.
const (
	Kubelet    = "kubelet"
	KubeProxy  = "kube-proxy"
	Containerd = "containerd"
	Flanneld   = "flanneld"
	// HybridOverlayNode is OVN-Kubernetes' hybrid-overlay-node.
	HybridOverlayNode = "hybrid-overlay-node"
)

// ProgramName is the stand-in program that argv0 names: its base name
// (with / or \ separators), lower-cased, without ".exe".
func ProgramName(argv0 string) string {
	base := argv0
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.ToLower(base)
	return strings.TrimSuffix(base, ".exe")
}

// Main runs the stand-in program named by argv0 with args and returns its
// exit code.
func Main(argv0 string, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	switch name := ProgramName(argv0); name {
	case Kubelet:
		return runKubelet(ctx, args)
	case KubeProxy:
		return runKubeProxy(ctx, args)
	case Containerd:
		return runContainerd(ctx, args)
	case Flanneld:
		return runFlanneld(ctx, args)
	case HybridOverlayNode:
		return runHybridOverlayNode(ctx, args)
	case CSIProxy:
		return runCSIProxy(ctx, args)
	case WindowsExporter:
		return runWindowsExporter(ctx, args)
	default:
		fmt.Fprintf(os.Stderr, "winsim-standin: started as %q; this simulated program answers only to %s.exe, %s.exe, %s.exe, %s.exe, %s.exe, %s.exe or %s.exe (copy or link it under one of those names)\n", argv0, Kubelet, KubeProxy, Containerd, Flanneld, HybridOverlayNode, CSIProxy, WindowsExporter)
		return 1
	}
}

// logger writes a stand-in's log lines to stderr (which the simulated SCM
// keeps in the service's log) and, when asked, to --log-file. Every line
// says the program is simulated.
type logger struct {
	mu      sync.Mutex
	program string
	out     io.Writer
	verbose int
}

func newLogger(program string) *logger {
	return &logger{program: program, out: os.Stderr}
}

// toFile also writes to file (a Windows path on a simulated host).
func (l *logger) toFile(file string) error {
	f, err := openLogFile(file)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.out = io.MultiWriter(os.Stderr, f)
	l.mu.Unlock()
	return nil
}

// onlyToFile writes to file instead of stderr (klog's -logtostderr=false
// with -log_file).
func (l *logger) onlyToFile(file string) error {
	f, err := openLogFile(file)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.out = f
	l.mu.Unlock()
	return nil
}

// openLogFile opens a log file (a Windows path on a simulated host) for
// appending, creating its folder.
func openLogFile(file string) (*os.File, error) {
	p, err := hostPath(file)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("--log-file %s: %w", file, err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--log-file %s: %w", file, err)
	}
	return f, nil
}

func (l *logger) logf(level byte, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	fmt.Fprintf(l.out, "%c%s %7d] %s (simulated by winsim): %s\n", level, now.Format("0102 15:04:05.000000"), os.Getpid(), l.program, fmt.Sprintf(format, args...))
}

func (l *logger) Infof(format string, args ...any)    { l.logf('I', format, args...) }
func (l *logger) Warningf(format string, args ...any) { l.logf('W', format, args...) }
func (l *logger) Errorf(format string, args ...any)   { l.logf('E', format, args...) }

// V logs only at verbosity v or more (--v).
func (l *logger) V(v int, format string, args ...any) {
	if l.verbose >= v {
		l.logf('I', format, args...)
	}
}

// hostPath maps a path given to a stand-in program to the Linux file. On a
// simulated host (WINSIM_ROOT set), `C:\x`, `C:/x` and `/x` (the current
// drive's root, as on Windows) are paths on the host's C:\; anything else
// is relative to the working folder.
func hostPath(p string) (string, error) {
	root := os.Getenv(simscm.EnvRoot)
	if root == "" || p == "" {
		return p, nil
	}
	if strings.HasPrefix(p, `\\`) {
		return "", fmt.Errorf("path %s: network paths are not simulated", p)
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		p = "C:" + p
	}
	if wp, err := winpath.Parse(p); err == nil {
		return winpath.Resolve(root, wp)
	}
	if len(p) > 1 && p[1] == ':' {
		return "", fmt.Errorf("path %s: not a valid path on the simulated host", p)
	}
	return strings.ReplaceAll(p, `\`, "/"), nil
}

// windowsForm returns p as the program would write it into a file on a
// Windows host: Windows paths stay as they are.
func windowsForm(p string) string {
	if os.Getenv(simscm.EnvRoot) == "" {
		return p
	}
	if strings.HasPrefix(p, "/") {
		p = "C:" + p
	}
	if wp, err := winpath.Parse(p); err == nil {
		return wp.String()
	}
	return p
}

// scmClient is the simulated host's service control manager, or an error
// when the program does not run on a simulated host.
func scmClient() (*simscm.Client, error) {
	sock := os.Getenv(simscm.EnvSocket)
	if sock == "" {
		return nil, fmt.Errorf("%s is not set: the stand-in programs run only on a simulated Windows host (winsim)", simscm.EnvSocket)
	}
	return simscm.Dial(sock), nil
}

// timeNow is time.Now, named for the one place that compares expiry.
var timeNow = time.Now

// answerServiceManager is what the real program does when told it runs as
// a Windows service (the kubelet's and kube-proxy's --windows-service,
// k8s.io/kubernetes pkg/windows/service.InitService; containerd's
// --run-service; hybrid-overlay-node's --windows-service): it calls
// StartServiceCtrlDispatcher through golang.org/x/sys/windows/svc.Run. The
// service control manager waits for that call and kills a service process
// that does not make it in time (error 1053); run from a console, or as
// the child of another service's process, the call fails (error 1063) and
// so does the program, as the kubelet's "Running kubelet as a Windows has
// error" shows.
func answerServiceManager(ctx context.Context, log *logger, service string) error {
	c, err := scmClient()
	if err == nil {
		err = c.ConnectDispatcher(ctx)
	}
	if err != nil {
		log.Errorf("Running %s as a Windows has error %v!", service, err)
		return err
	}
	log.Infof("Running %s as a Windows service!", service)
	return nil
}
