package standin

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
)

// ContainerdVersion is the version the simulated containerd reports, and
// the kubelet stand-in's containerRuntimeVersion.
const ContainerdVersion = "1.7.22"

// RuntimeHandler is the one runtime handler the simulated containerd has:
// the runtime containerd's default CRI configuration on Windows names
// (default_runtime_name = "runhcs-wcow-process", process-isolated Windows
// containers). A pod whose RuntimeClass names another handler cannot get
// a sandbox, as on a real host with containerd's default configuration.
const RuntimeHandler = "runhcs-wcow-process"

// runContainerd is the simulated containerd: it accepts containerd's
// Windows service flags and runs until stopped. It runs no containers.
func runContainerd(ctx context.Context, args []string) int {
	log := newLogger("containerd")
	fs := pflag.NewFlagSet("containerd", pflag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	var (
		runService, registerService, unregisterService, version      bool
		config, logFile, logLevel, address, serviceName, root, state string
	)
	fs.BoolVar(&runService, "run-service", false, "run as a Windows service")
	fs.BoolVar(&registerService, "register-service", false, "register containerd as a Windows service")
	fs.BoolVar(&unregisterService, "unregister-service", false, "unregister the containerd Windows service")
	fs.StringVar(&serviceName, "service-name", "containerd", "Windows service name")
	fs.StringVarP(&config, "config", "c", "", "path to the configuration file")
	fs.StringVar(&logFile, "log-file", "", "file to write logs to")
	fs.StringVarP(&logLevel, "log-level", "l", "info", "log level")
	fs.StringVarP(&address, "address", "a", `\\.\pipe\containerd-containerd`, "address for containerd's GRPC server")
	fs.StringVar(&root, "root", `C:\ProgramData\containerd\root`, "containerd root folder")
	fs.StringVar(&state, "state", `C:\ProgramData\containerd\state`, "containerd state folder")
	fs.BoolVarP(&version, "version", "v", false, "print the version")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "containerd: %v\n", err)
		return 1
	}
	if version {
		fmt.Printf("containerd github.com/containerd/containerd v%s (simulated by winsim)\n", ContainerdVersion)
		return 0
	}
	if registerService || unregisterService {
		fmt.Fprintln(os.Stderr, "containerd (simulated by winsim): services are registered through the simulated service control manager; nothing to do")
		return 0
	}
	if logFile != "" {
		if err := log.toFile(logFile); err != nil {
			fmt.Fprintf(os.Stderr, "containerd: %v\n", err)
			return 1
		}
	}
	if runService {
		if err := answerServiceManager(ctx, log, "containerd"); err != nil {
			return 1
		}
	}
	if config != "" {
		p, err := hostPath(config)
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			log.Errorf("failed to load TOML from %s: %v", config, err)
			return 1
		}
	}
	log.Infof("starting containerd version=v%s address=%s (simulated: no containers run on this host)", ContainerdVersion, address)
	<-ctx.Done()
	log.Infof("stop signal received, containerd exiting")
	return 0
}
