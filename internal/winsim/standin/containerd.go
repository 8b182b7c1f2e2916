package standin

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/winsim/simpayload"
)

// ContainerdVersion is the version the simulated containerd reports (the
// payload's containerd), and, as the CRI plugin reports it (without the
// v), the kubelet stand-in's containerRuntimeVersion.
const ContainerdVersion = "2.4.2"

// RuntimeHandler is the one runtime handler the simulated containerd has:
// the runtime containerd's default CRI configuration on Windows names
// (default_runtime_name = "runhcs-wcow-process", process-isolated Windows
// containers). A pod whose RuntimeClass names another handler cannot get
// a sandbox, as on a real host with containerd's default configuration.
const RuntimeHandler = "runhcs-wcow-process"

// containerdHiddenFlags are flags containerd accepts that its --help does
// not list (urfave/cli's Hidden), so the recorded list lacks them:
// --run-service, which containerd's --register-service writes into the
// service it registers (cmd/containerd/command/service_windows.go).
var containerdHiddenFlags = []flagSpec{{name: "run-service", kind: "bool"}}

// containerdFlags are the flags the simulated containerd interprets.
type containerdFlags struct {
	config, logFile, logLevel, address, serviceName, root, state string
	runService, registerService, unregisterService, version      bool
}

// containerdFlagSet is containerd's flag set as the stand-in parses it:
// exactly the recorded flags (flags/containerd.txt) and the hidden ones,
// with their shorthands, parsed as urfave/cli parses them (Go's flag
// package: -x and --x; "flag provided but not defined: -x").
func containerdFlagSet(f *containerdFlags) (*flag.FlagSet, error) {
	own := flag.NewFlagSet("containerd", flag.ContinueOnError)
	own.StringVar(&f.config, "config", defaultContainerdConfig, "")
	own.StringVar(&f.logFile, "log-file", "", "")
	own.StringVar(&f.logLevel, "log-level", "", "")
	own.StringVar(&f.address, "address", "", "")
	own.StringVar(&f.serviceName, "service-name", "containerd", "")
	own.StringVar(&f.root, "root", "", "")
	own.StringVar(&f.state, "state", "", "")
	own.BoolVar(&f.runService, "run-service", false, "")
	own.BoolVar(&f.registerService, "register-service", false, "")
	own.BoolVar(&f.unregisterService, "unregister-service", false, "")
	own.BoolVar(&f.version, "version", false, "")
	fs, err := strictGoFlagsWith("containerd", own, containerdHiddenFlags)
	if err != nil {
		return nil, err
	}
	fs.SetOutput(io.Discard)
	return fs, nil
}

// runContainerd is the simulated containerd: it reads its configuration as
// containerd does, needs the Containers feature, answers the service
// control manager with --run-service, and serves its pipe until stopped
// (containerd_api.go). It runs no containers.
func runContainerd(ctx context.Context, args []string) int {
	log := newLogger("containerd")
	var f containerdFlags
	fs, err := containerdFlagSet(&f)
	if err == nil {
		err = fs.Parse(args)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "containerd: %v\n", err)
		return 1
	}
	if f.version {
		fmt.Printf("containerd github.com/containerd/containerd/v2 v%s v%s (simulated by winsim)\n", ContainerdVersion, ContainerdVersion)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "containerd (simulated by winsim): command %q is not simulated\n", fs.Arg(0))
		return 1
	}
	if f.registerService || f.unregisterService {
		fmt.Fprintln(os.Stderr, "containerd (simulated by winsim): services are registered through the simulated service control manager; nothing to do")
		return 0
	}
	if err := containerd(ctx, log, &f, flagSet(fs, "config", "c")); err != nil {
		fmt.Fprintf(os.Stderr, "containerd: %v\n", err)
		log.Errorf("%v", err)
		return 1
	}
	log.Infof("containerd successfully booted, exiting on stop")
	return 0
}

// containerd runs the daemon until ctx ends.
func containerd(ctx context.Context, log *logger, f *containerdFlags, explicitConfig bool) error {
	if f.logFile != "" {
		if err := log.toFile(f.logFile); err != nil {
			return err
		}
	}
	if faulty() {
		return errors.New("simulated fault: this containerd.exe was built to fail at start (simpayload.Options.ContainerdFails)")
	}
	rt, err := loadContainerdConfig(log, f.config, explicitConfig)
	if err != nil {
		return err
	}
	if err := containersFeature(ctx); err != nil {
		return err
	}
	if f.runService {
		if err := answerServiceManager(ctx, log, f.serviceName); err != nil {
			return err
		}
	}
	address := f.address
	if address == "" {
		address = containerdPipeDefault
	}
	log.Infof("starting containerd revision=v%s version=v%s config=%s (simulated: no containers run on this host)", ContainerdVersion, ContainerdVersion, f.config)
	return serveContainerd(ctx, log, &containerdSim{log: log, runtime: rt}, address)
}

// containersFeature fails as containerd's Windows plugins do when the
// Windows Containers feature (the host compute service, vmcompute.dll) is
// missing. The real containerd logs its Windows snapshotter and runtime
// plugins as failed and goes on without them, useless to the kubelet; the
// simulated one stops, which says the same sooner.
func containersFeature(ctx context.Context) error {
	c, err := scmClient()
	if err != nil {
		return err
	}
	feature, err := c.Feature(ctx, "Containers")
	if err != nil || feature.State != simscm.FeatureEnabled {
		state := "missing"
		if err == nil {
			state = strings.ToLower(string(feature.State))
		}
		return fmt.Errorf("failed to load plugin io.containerd.snapshotter.v1.windows: the Windows feature Containers is %s: vmcompute.dll: The specified module could not be found", state)
	}
	return nil
}

// faulty says whether this program's file ends with the fault marker of a
// containerd built to fail (simpayload.ContainerdFault).
func faulty() bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	f, err := os.Open(exe)
	if err != nil {
		return false
	}
	defer f.Close()
	tail := make([]byte, 256)
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(len(tail)) {
		_, _ = f.Seek(fi.Size()-int64(len(tail)), io.SeekStart)
	}
	n, _ := io.ReadFull(f, tail)
	return bytes.HasSuffix(tail[:n], []byte(simpayload.ContainerdFault))
}

// flagSet says whether the flag was given on the command line, by one of
// its names.
func flagSet(fs *flag.FlagSet, names ...string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n {
				set = true
			}
		}
	})
	return set
}
