// Command winsim runs simulated Windows Server hosts on this Linux machine,
// reached over real SSH and SFTP, for demos and tests (see
// internal/winsim/README.md). Nothing here is Windows: it is a simulation.
//
//	winsim --hosts N --authorized-key FILE.pub --state DIR [--windows-build 2019|2022[.UBR]] [--hostname NAME]
//	       [--foreign-containerd] [--containers-feature=false] [--defender]
//	       [--free-disk-gib N] [--clock-offset DURATION] [--pending-reboot] [--no-api-route] [--dhcp]
//	       [--kubelet-port-blocked]
//
// prints one line per host, `<hostname> <ip>:<port> <SHA256:fingerprint>`,
// then runs until interrupted and stops everything it started. The state
// folder keeps the hosts (identity, host keys, files, services) between runs.
// --hostname (with --hosts 1 only) names the host, e.g. as a clone of
// another host would be named. A new host is a stock Windows Server with
// no container runtime; --foreign-containerd gives it a containerd winnode
// did not install, --without-containers-feature leaves the Containers
// feature off (enabling it takes a restart; --without-containers-feature
// is its older spelling), --defender runs Defender. The pre-flight checks'
// conditions (docs/troubleshooting.md): --windows-build 2022.643 gives the
// patch level (the update build revision), --free-disk-gib the free space
// on C:, --clock-offset moves the host's clock (-10m: ten minutes behind),
// --pending-reboot leaves a restart pending, --no-api-route cuts the route
// to the API server, --dhcp makes the address a DHCP lease; after the
// configuration, --kubelet-port-blocked puts a network firewall before the
// kubelet's port (the kubelet-port check).
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/winsim"
)

func main() {
	var (
		hosts   int
		keyFile string
		state   string
		build   string
		// containersFeature: --containers-feature (default true).
		containersFeature bool
		standin           string
		name              string
		extra             winsim.Options
	)
	cmd := &cobra.Command{
		Use:           "winsim --hosts N --authorized-key FILE.pub --state DIR [--windows-build 2019|2022] [--hostname NAME]",
		Short:         "Run simulated Windows Server hosts reached over real SSH and SFTP",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			extra.StateDir, extra.StandinBinary, extra.Hostname = state, standin, name
			var err error
			if extra.Build, extra.UBR, err = parseBuild(build); err != nil {
				return err
			}
			extra.WithoutContainersFeature = extra.WithoutContainersFeature || !containersFeature
			return run(hosts, keyFile, extra)
		},
	}
	f := cmd.Flags()
	f.IntVar(&hosts, "hosts", 1, "number of simulated hosts")
	f.StringVar(&keyFile, "authorized-key", "", "public key (OpenSSH .pub) allowed to log in as Administrator on every host")
	f.StringVar(&state, "state", "", "folder keeping the hosts' state between runs")
	f.StringVar(&build, "windows-build", "", "Windows Server build to simulate: 2019 or 2022, with a patch level (update build revision) as 2022.643 (default: as saved, else 2019 at a recent patch level)")
	f.StringVar(&standin, "standin", "", "Linux build of winsim-standin, the foreign containerd.exe of --foreign-containerd (default: winsim-standin beside this program or on PATH)")
	f.StringVar(&name, "hostname", "", "the host's computer name (with --hosts 1 only; default: as saved, else WIN-<random>), e.g. a clone's")
	f.BoolVar(&extra.ForeignContainerd, "foreign-containerd", false, "give new hosts a containerd winnode did not install (C:\\Program Files\\containerd), as a host set up by hand")
	f.BoolVar(&extra.WithoutContainersFeature, "without-containers-feature", false, "leave the Windows Containers feature off on new hosts (enabling it takes a restart)")
	f.BoolVar(&containersFeature, "containers-feature", true, "enable the Windows Containers feature on new hosts (false: off, and enabling it takes a restart)")
	f.BoolVar(&extra.Defender, "defender", false, "run Microsoft Defender Antivirus on new hosts (simulated: its exclusions)")
	f.IntVar(&extra.FreeDiskGiB, "free-disk-gib", 0, fmt.Sprintf("free space on C: in GiB (default: as saved, else %d)", winsim.DefaultFreeDiskGiB))
	f.DurationVar(&extra.ClockOffset, "clock-offset", 0, "move the hosts' clocks from this machine's (-10m: ten minutes behind)")
	f.BoolVar(&extra.PendingReboot, "pending-reboot", false, "leave a restart pending (an update installed) until the host restarts")
	f.BoolVar(&extra.NoAPIRoute, "no-api-route", false, "the hosts cannot reach the API server (connections out time out)")
	f.BoolVar(&extra.DHCP, "dhcp", false, "the hosts' addresses are DHCP leases")
	f.BoolVar(&extra.KubeletPortBlocked, "kubelet-port-blocked", false, "a network firewall outside the hosts rejects connections to the kubelet's port (the API server cannot reach it)")
	_ = cmd.MarkFlagRequired("authorized-key")
	_ = cmd.MarkFlagRequired("state")
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "winsim:", err)
		os.Exit(1)
	}
}

// parseBuild reads --windows-build: 2019 or 2022, optionally with a patch
// level (2022.643).
func parseBuild(s string) (string, int, error) {
	build, patch, hasPatch := strings.Cut(s, ".")
	if build != "" && build != "2019" && build != "2022" {
		return "", 0, fmt.Errorf("--windows-build %q: want 2019 or 2022, optionally with a patch level (2022.643)", s)
	}
	if !hasPatch {
		return build, 0, nil
	}
	ubr, err := strconv.Atoi(patch)
	if err != nil || ubr <= 0 {
		return "", 0, fmt.Errorf("--windows-build %q: the patch level after the dot must be a positive number (2022.643)", s)
	}
	return build, ubr, nil
}

func run(n int, keyFile string, o winsim.Options) error {
	if o.Hostname != "" && n != 1 {
		return fmt.Errorf("--hostname %s names one host: use it with --hosts 1", o.Hostname)
	}
	data, err := os.ReadFile(keyFile)
	if err != nil {
		return fmt.Errorf("--authorized-key: %w", err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return fmt.Errorf("--authorized-key %s: not an OpenSSH public key (want the .pub file): %w", keyFile, err)
	}
	if o.StandinBinary == "" {
		o.StandinBinary = findStandin()
	}
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	if o.StandinBinary == "" && o.ForeignContainerd {
		return errors.New("--foreign-containerd: winsim-standin not found (use --standin)")
	}
	// Catch the stop signals before the host lines are printed: whoever reads
	// them may interrupt at once, and must get a clean shutdown, not a kill.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	fleet, err := winsim.StartFleet(n, o)
	if err != nil {
		return err
	}
	for _, h := range fleet.Hosts {
		if err := h.AuthorizeKey(pub); err != nil {
			fleet.Close()
			return err
		}
	}
	for _, h := range fleet.Hosts {
		fmt.Printf("%s %s %s\n", h.Hostname(), h.Addr(), h.Fingerprint())
	}
	o.Logger.Info("simulated hosts running; interrupt to stop", "hosts", n, "state", o.StateDir)
	<-sig
	o.Logger.Info("stopping the simulated hosts")
	return fleet.Close()
}

// findStandin looks for winsim-standin beside this program, then on PATH.
func findStandin() string {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "winsim-standin")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("winsim-standin"); err == nil {
		return p
	} else if !errors.Is(err, exec.ErrNotFound) {
		return ""
	}
	return ""
}
