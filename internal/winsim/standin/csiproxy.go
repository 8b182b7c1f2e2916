package standin

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
)

// CSIProxy is the CSI proxy (github.com/kubernetes-csi/csi-proxy).
const CSIProxy = "csi-proxy"

// csiProxyVersion is the release the payload carries
// (hack/payload/csi-proxy/go.mod), which the real program logs at start.
const csiProxyVersion = "v1.1.3"

// csiProxyFlags are the flags of csi-proxy the stand-in uses
// (cmd/csi-proxy/main.go and klog's); it accepts exactly the real
// csi-proxy's (flags.go), parsed as csi-proxy parses them: Go's flag
// package, -name or --name.
type csiProxyFlags struct {
	kubeletPath, logFile string
	workingDirs          stringList
	windowsService       bool
	logToStderr          bool
	verbosity            int
}

// stringList is a flag given several times (-working-dir).
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func parseCSIProxyFlags(args []string) (*csiProxyFlags, error) {
	f := &csiProxyFlags{}
	own := flag.NewFlagSet("csi-proxy", flag.ContinueOnError)
	own.SetOutput(os.Stderr)
	own.StringVar(&f.kubeletPath, "kubelet-path", `C:\var\lib\kubelet`, "Prefix path of the kubelet directory in the host file system")
	own.Var(&f.workingDirs, "working-dir", "Prefix path of the csi-proxy working directory in the host file system")
	own.BoolVar(&f.windowsService, "windows-service", false, "Configure as a Windows Service")
	own.BoolVar(&f.logToStderr, "logtostderr", true, "log to standard error instead of files")
	own.StringVar(&f.logFile, "log_file", "", "If non-empty, use this log file (no effect when -logtostderr=true)")
	own.IntVar(&f.verbosity, "v", 0, "number for the log level verbosity")
	fs, err := strictGoFlags(CSIProxy, own)
	if err != nil {
		return nil, err
	}
	return f, fs.Parse(args)
}

// runCSIProxy is the simulated csi-proxy: it parses its flags as the real
// one does (an unknown one: Go's "flag provided but not defined" and the
// usage, exit 2), answers the service control manager only when given
// -windows-service, logs what the real one logs at start (to standard
// error, klog's default, or with -logtostderr=false to -log_file only),
// and runs until stopped. It serves none of the real one's named pipes
// (\\.\pipe\csi-proxy-*): no CSI node plugin runs on a simulated host.
func runCSIProxy(ctx context.Context, args []string) int {
	f, err := parseCSIProxyFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2 // flag.ExitOnError's code; the flag package printed why
	}
	log := newLogger(CSIProxy)
	log.verbose = f.verbosity
	if !f.logToStderr && f.logFile != "" {
		if err := log.onlyToFile(f.logFile); err != nil {
			log.Errorf("%v", err)
			return 1
		}
	}
	if f.windowsService {
		if err := answerServiceManager(ctx, log, CSIProxy); err != nil {
			return 1
		}
	}
	log.Infof("Starting CSI-Proxy Server ...")
	log.Infof("Version: %s", csiProxyVersion)
	// The real program's words, with its klog.Info of a format string.
	log.Infof("Working directories: %%v[%s]", strings.Join(append([]string{f.kubeletPath}, f.workingDirs...), " "))
	log.V(2, "serving the disk, filesystem, smb, system and volume APIs (simulated: no named pipe is served)")
	<-ctx.Done()
	log.Infof("stop signal received, csi-proxy exiting")
	return 0
}
