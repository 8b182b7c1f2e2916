// Package winsim simulates Windows Server hosts on a Linux machine, reached
// over real SSH and SFTP, so that winnode's operator, agent, CLI and demo
// can be built and tested with no Windows in sight. Everything here is a
// simulation and says so in its logs.
//
// A Host has its own address (loopback 127.0.0.N, or one of
// $WINSIM_NETWORK: network.go) and SSH port, a persistent host key,
// public-key authentication against
// C:\ProgramData\ssh\administrators_authorized_keys in its own filesystem,
// a filesystem rooted in a Linux folder (C:\ maps onto it, names are
// case-insensitive), exec of programs found in that filesystem (Linux builds
// standing in for Windows programs), a service control manager (package
// scm), and faults on demand (Reboot, DropConnections, SetLink,
// CrashService, RotateHostKey).
package winsim

import (
	"github.com/winnode/winnode/internal/winsim/acl"

	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simhns"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/wincmd"
	"github.com/winnode/winnode/internal/winpath"
	"github.com/winnode/winnode/internal/winsim/filestore"
	"github.com/winnode/winnode/internal/winsim/scm"
	"github.com/winnode/winnode/internal/winsim/winexec"
)

// Windows paths every simulated host has.
const (
	AuthorizedKeysPath = `C:\ProgramData\ssh\administrators_authorized_keys`
	HostKeyPath        = `C:\ProgramData\ssh\ssh_host_ed25519_key`
	ServiceLogDir      = `C:\ProgramData\winsim\logs`
	ContainerdPath     = `C:\Program Files\containerd\containerd.exe`
)

// Options configures a simulated host. Only StateDir is required; what is
// left empty is taken from the host's saved state, or defaulted (and then
// saved), so a host keeps its identity across runs.
type Options struct {
	// StateDir holds everything the host keeps: C:\ (StateDir/C), its
	// identity (host.json), its services (services.json) and the SCM socket.
	StateDir string
	// Hostname follows the NetBIOS rule (at most 15 letters, digits and
	// hyphens). Default: WIN- and 11 random characters, as Windows setup does.
	Hostname string
	// DNSDomain, when set, makes the FQDN Hostname.DNSDomain.
	DNSDomain string
	// Build is "2019" (10.0.17763, default) or "2022" (10.0.20348).
	Build string
	// Builds, for StartFleet only, gives the hosts their builds in turn:
	// host i runs Builds[i mod len(Builds)], overriding Build.
	Builds []string
	// IP is the host's IPv4 address, in Network() (loopback by default).
	// Default: the next free one from the network's 10th (127.0.0.10) upward (free: used by no other host of this process,
	// nor by simulated hosts of other processes on this machine).
	IP string
	// Port is the SSH port. 0: the saved port, else 22 when it can be bound,
	// else a free port.
	Port int
	// User is the one account that may log in. Default "Administrator".
	User string
	// StandinBinary is the Linux build of cmd/winsim-standin, which
	// ForeignContainerd installs.
	StandinBinary string
	// ForeignContainerd prepares the host with a containerd winnode did
	// not install, as a host set up by hand or by another tool: the
	// stand-in as C:\Program Files\containerd\containerd.exe, registered
	// as the auto-start service "containerd" (containerd's own
	// --register-service: `containerd.exe --run-service`), Running from
	// boot. Without it a host starts bare, as a stock Windows Server: no
	// container runtime.
	ForeignContainerd bool
	// WithoutContainersFeature leaves the Windows Containers feature
	// disabled, as on a stock Windows Server: enabling it takes a restart,
	// and containerd cannot run without it. By default it is enabled (an
	// image prepared for containers).
	WithoutContainersFeature bool
	// Defender runs Microsoft Defender Antivirus (simulated: its state and
	// exclusions only).
	Defender bool
	// What the pre-flight checks read (preflight.go); each can be changed
	// later on the running host (SetFreeDiskGiB and the like). Zero values
	// leave a saved host's as they were.
	//
	// UBR is the update build revision, the patch level (Build
	// 10.0.20348 with UBR 643 is 20348.643). Default: a current one.
	UBR int
	// FreeDiskGiB is the free space on C:. Default DefaultFreeDiskGiB.
	FreeDiskGiB int
	// ClockOffset moves the host's clock from this machine's.
	ClockOffset time.Duration
	// PendingReboot: Windows waits for a restart (an update installed),
	// until the host restarts.
	PendingReboot bool
	// NoAPIRoute: the host cannot reach the API server (its connections
	// out time out).
	NoAPIRoute bool
	// DHCP: the host's address is a DHCP lease.
	DHCP bool
	// KubeletPortBlocked: a network firewall outside the host rejects
	// connections to the kubelet's port (the API server's logs, exec and
	// proxy requests fail; the host itself sees nothing wrong).
	KubeletPortBlocked bool
	// BootDelay is how long a Reboot keeps the host down before SSH and the
	// auto-start services come back. Default 2s.
	BootDelay time.Duration
	// ServiceStartTimeout is how long the simulated service control manager
	// waits for a started service's process to answer it before killing it
	// (Windows' ServicesPipeTimeout). Default scm.DefaultStartTimeout, 30s
	// as on Windows; tests of a program that never answers set less.
	ServiceStartTimeout time.Duration
	// Logger receives the host's log lines. Default slog.Default().
	Logger *slog.Logger
	// Store, when set, keeps one copy of each program file that hosts
	// sharing it hold at the same path with the same content (package
	// filestore): a fleet of configured hosts then takes the disk of one.
	// Writes over SFTP copy a shared file first; nothing a host or winnode
	// observes changes.
	Store *filestore.Store
}

// identity is what host.json keeps between runs.
type identity struct {
	Hostname  string `json:"hostname"`
	DNSDomain string `json:"dnsDomain,omitempty"`
	Build     string `json:"build"`
	IP        string `json:"ip"`
	Port      int    `json:"port,omitempty"`
	// VMUUID is the SMBIOS UUID (Win32_ComputerSystemProduct.UUID) a
	// hypervisor gives each VM, clones included.
	VMUUID string `json:"vmUUID,omitempty"`
}

// Host is one simulated Windows Server host.
type Host struct {
	opts     Options
	log      *slog.Logger
	root     string // Linux folder for C:\
	stateDir string
	id       identity
	product  string
	scmSock  string
	scm      *scm.Manager
	security *acl.Store
	settings *settings // features, Defender, the Root store (hostsettings.go)

	mu        sync.Mutex
	signer    ssh.Signer
	listener  net.Listener
	scmLn     net.Listener
	conns     map[*trackedConn]struct{}
	sessions  map[*session]struct{}
	up        bool
	closed    bool
	bootTime  time.Time
	link      linkShaper
	serveDone sync.WaitGroup
	counters  hostCounters
	// pendingHostname: the computer name RenameComputer set, taken at the
	// next Reboot.
	pendingHostname string
	// unsafeExecs: programs run from where local users can write (execaudit.go).
	unsafeExecs []UnsafeExec
	// launch is the program the user data runs after the first boot
	// (cloudbaseinit.go).
	launch *launch
}

var netbiosName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,14}$`)

// builds maps the names Options.Build accepts to the OS build and product.
var builds = map[string]struct{ build, product string }{
	"2019":       {"10.0.17763", "Windows Server 2019 Datacenter"},
	"10.0.17763": {"10.0.17763", "Windows Server 2019 Datacenter"},
	"2022":       {"10.0.20348", "Windows Server 2022 Datacenter"},
	"10.0.20348": {"10.0.20348", "Windows Server 2022 Datacenter"},
}

// New prepares a simulated host in opts.StateDir: its folders, identity and
// host key. It does not listen yet; call Start.
func New(opts Options) (*Host, error) {
	if opts.StateDir == "" {
		return nil, errors.New("simulated host: Options.StateDir is required")
	}
	if len(opts.Builds) > 0 {
		return nil, errors.New("simulated host: Options.Builds is for StartFleet; give one host its Build")
	}
	stateDir, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, err
	}
	if opts.User == "" {
		opts.User = "Administrator"
	}
	if opts.BootDelay <= 0 {
		opts.BootDelay = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &Host{
		opts:     opts,
		stateDir: stateDir,
		root:     filepath.Join(stateDir, "C"),
		conns:    map[*trackedConn]struct{}{},
		sessions: map[*session]struct{}{},
	}
	if err := os.MkdirAll(h.root, 0o755); err != nil {
		return nil, fmt.Errorf("simulated host: creating its C:\\ folder: %w", err)
	}
	if err := h.loadIdentity(); err != nil {
		return nil, err
	}
	h.log = opts.Logger.With("simulatedHost", h.id.Hostname)
	for _, dir := range []string{`C:\Windows\System32`, h.Profile(), `C:\ProgramData\ssh`, ServiceLogDir, `C:\Program Files`} {
		p, err := winpath.ResolveString(h.root, dir)
		if err == nil {
			err = os.MkdirAll(p, 0o755)
		}
		if err != nil {
			return nil, fmt.Errorf("simulated host %s: creating %s: %w", h.id.Hostname, dir, err)
		}
	}
	if err := h.installSystemPrograms(); err != nil {
		return nil, err
	}
	if err := h.loadHostKey(); err != nil {
		return nil, err
	}
	h.scmSock = socketPath(stateDir)
	if h.security, err = acl.Open(filepath.Join(stateDir, "security.json"), h.root); err != nil {
		return nil, err
	}
	if err := h.security.Set(h.Profile(), "", profileDACL); err != nil {
		return nil, fmt.Errorf("simulated host %s: the profile folder's ACL: %w", h.id.Hostname, err)
	}
	if h.settings, err = loadSettings(stateDir, opts, h.id.Build); err != nil {
		return nil, err
	}
	mgr, err := scm.NewManager(scm.ManagerOptions{
		Routes:       h.serveSettings,
		Security:     h.security,
		StateFile:    filepath.Join(stateDir, "services.json"),
		Host:         h.execHost(),
		LogDir:       ServiceLogDir,
		Logger:       h.log,
		StartTimeout: opts.ServiceStartTimeout,
	})
	if err != nil {
		return nil, err
	}
	h.scm = mgr
	return h, nil
}

// socketPath is the SCM socket in the state folder, or, when that path is
// too long for a Unix socket (108 bytes), one in a short temporary folder.
func socketPath(stateDir string) string {
	p := filepath.Join(stateDir, "scm.sock")
	if len(p) < 100 {
		return p
	}
	dir, err := os.MkdirTemp("", "winsim-")
	if err != nil {
		return p
	}
	return filepath.Join(dir, "scm.sock")
}

// loadIdentity reads host.json, fills in what Options set and what is
// missing, and writes it back.
func (h *Host) loadIdentity() error {
	file := filepath.Join(h.stateDir, "host.json")
	var id identity
	if data, err := os.ReadFile(file); err == nil {
		if err := json.Unmarshal(data, &id); err != nil {
			return fmt.Errorf("simulated host: %s is damaged (%v); delete it to give the host a new identity", file, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("simulated host: reading %s: %w", file, err)
	}
	o := h.opts
	if o.Hostname != "" {
		id.Hostname = o.Hostname
	}
	if id.Hostname == "" {
		id.Hostname = "WIN-" + randomName(11)
	}
	if !netbiosName.MatchString(id.Hostname) {
		return fmt.Errorf("simulated host: hostname %q breaks the NetBIOS rule (1-15 letters, digits or hyphens, not starting with a hyphen)", id.Hostname)
	}
	if o.DNSDomain != "" {
		id.DNSDomain = o.DNSDomain
	}
	if o.Build != "" {
		id.Build = o.Build
	}
	if id.Build == "" {
		id.Build = "2019"
	}
	b, ok := builds[id.Build]
	if !ok {
		return fmt.Errorf("simulated host %s: unknown Windows build %q (want 2019 or 2022)", id.Hostname, id.Build)
	}
	h.product = b.product
	id.Build = b.build
	if o.IP != "" {
		id.IP = o.IP
	}
	network, err := Network()
	if err != nil {
		return fmt.Errorf("simulated host %s: %w", id.Hostname, err)
	}
	if id.IP == "" {
		if id.IP = allocateIP(network); id.IP == "" {
			return fmt.Errorf("simulated host %s: no free address left in %s (%s)", id.Hostname, network, EnvNetwork)
		}
	} else {
		reserveIP(id.IP)
	}
	if ip, err := netip.ParseAddr(id.IP); err != nil || !ip.Is4() || !network.Contains(ip) {
		return fmt.Errorf("simulated host %s: address %q is not an IPv4 address of the simulated hosts' network %s (loopback unless %s is set)", id.Hostname, id.IP, network, EnvNetwork)
	}
	if o.Port != 0 {
		id.Port = o.Port
	}
	if id.VMUUID == "" {
		id.VMUUID = newVMUUID()
	}
	h.id = id
	return h.saveIdentity()
}

func (h *Host) saveIdentity() error {
	data, _ := json.MarshalIndent(h.id, "", "  ")
	return writeFileAtomic(filepath.Join(h.stateDir, "host.json"), append(data, '\n'), 0o644)
}

// newVMUUID is a random UUID in the form Win32_ComputerSystemProduct
// reports it (upper-case hex, 8-4-4-4-12).
func newVMUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return strings.ToUpper(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

func randomName(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		v, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[v.Int64()]
	}
	return string(b)
}

var ipAlloc struct {
	sync.Mutex
	next  int
	taken map[string]bool
}

// allocateIP hands out the network's 10th, 11th, ... address (127.0.0.10,
// .11, ... by default), none ending in .0 or .255: each address once
// within this process, and none that another process's simulated hosts use
// (claimAddress). It returns "" when the network has no free address left.
func allocateIP(network netip.Prefix) string {
	ipAlloc.Lock()
	defer ipAlloc.Unlock()
	if ipAlloc.taken == nil {
		ipAlloc.taken = map[string]bool{}
		ipAlloc.next = 10
	}
	for {
		n := ipAlloc.next
		ipAlloc.next++
		a, ok := nthAddress(network, n)
		if !ok {
			return ""
		}
		if last := a.As4()[3]; last == 0 || last == 255 {
			continue
		}
		ip := a.String()
		if !ipAlloc.taken[ip] {
			ipAlloc.taken[ip] = true
			if claimAddress(ip) {
				return ip
			}
		}
	}
}

// reserveIP records the address of a host restored from its state (or
// given in Options.IP), and claims it against other processes when it can:
// a host keeps its address even if another process claims it.
func reserveIP(ip string) {
	ipAlloc.Lock()
	defer ipAlloc.Unlock()
	if ipAlloc.taken == nil {
		ipAlloc.taken = map[string]bool{}
		ipAlloc.next = 10
	}
	if !ipAlloc.taken[ip] {
		ipAlloc.taken[ip] = true
		claimAddress(ip)
	}
}

// Start makes the host listen for SSH, serves its SCM API, installs
// containerd when Options.StandinBinary is set, and boots: the auto-start
// services start.
func (h *Host) Start() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errors.New("simulated host: already closed")
	}
	h.mu.Unlock()
	if err := h.installContainerd(); err != nil {
		return err
	}
	if err := h.boot(); err != nil {
		return err
	}
	if h.opts.PendingReboot {
		// The host comes up with an update installed that waits for a
		// restart: the boot above finished whatever waited before.
		h.SetPendingReboot(true)
	}
	h.log.Info("simulated Windows host started", "address", h.Addr(), "build", h.id.Build, "hostKey", h.Fingerprint())
	h.startUserDataProgram()
	return nil
}

// boot binds SSH and the SCM socket, then starts the auto-start services.
func (h *Host) boot() error {
	ln, err := h.listen()
	if err != nil {
		return err
	}
	_ = os.Remove(h.scmSock)
	scmLn, err := net.Listen("unix", h.scmSock)
	if err != nil {
		ln.Close()
		return fmt.Errorf("simulated host %s: SCM socket %s: %w", h.id.Hostname, h.scmSock, err)
	}
	h.mu.Lock()
	h.listener, h.scmLn, h.up, h.bootTime = ln, scmLn, true, time.Now()
	h.mu.Unlock()
	h.serveDone.Add(2)
	go func() { defer h.serveDone.Done(); h.acceptLoop(ln) }()
	go func() { defer h.serveDone.Done(); h.scm.Serve(scmLn, h.hostInfo) }()
	h.settings.boot() // a feature enabled before the restart is now enabled
	h.scm.Boot()
	return nil
}

// listen binds the SSH port: the configured or saved one, else 22, else a
// free one; the port taken is saved.
func (h *Host) listen() (net.Listener, error) {
	try := func(port int) (net.Listener, error) {
		return net.Listen("tcp4", net.JoinHostPort(h.id.IP, strconv.Itoa(port)))
	}
	if h.opts.Port != 0 {
		ln, err := try(h.opts.Port)
		if err != nil {
			return nil, fmt.Errorf("simulated host %s: SSH port %d on %s: %w", h.id.Hostname, h.opts.Port, h.id.IP, err)
		}
		return ln, nil
	}
	var candidates []int
	if h.id.Port != 0 {
		candidates = append(candidates, h.id.Port)
	}
	candidates = append(candidates, 22, 0)
	var lastErr error
	for _, p := range candidates {
		ln, err := try(p)
		if err != nil {
			lastErr = err
			continue
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if port != h.id.Port {
			h.mu.Lock()
			h.id.Port = port
			h.mu.Unlock()
			if err := h.saveIdentity(); err != nil {
				ln.Close()
				return nil, err
			}
		}
		return ln, nil
	}
	return nil, fmt.Errorf("simulated host %s: no SSH port could be bound on %s: %w", h.id.Hostname, h.id.IP, lastErr)
}

// shutdown takes the host down as a power-off would: no new connections,
// every connection dropped, every process ended.
func (h *Host) shutdown() {
	h.mu.Lock()
	ln, scmLn := h.listener, h.scmLn
	h.listener, h.scmLn, h.up = nil, nil, false
	h.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	if scmLn != nil {
		scmLn.Close()
	}
	h.DropConnections()
	h.killSessions()
	h.killUserDataProgram()
	h.scm.Shutdown()
	h.serveDone.Wait()
}

// Close stops the host and every process it started. The state stays in
// StateDir for the next run.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.shutdown()
	h.scm.Close()
	_ = os.Remove(h.scmSock)
	if dir := filepath.Dir(h.scmSock); dir != h.stateDir {
		_ = os.Remove(dir)
	}
	h.log.Info("simulated Windows host stopped")
	return nil
}

// Addr is the SSH address, "IP:port".
func (h *Host) Addr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return net.JoinHostPort(h.id.IP, strconv.Itoa(h.id.Port))
}

// IP is the host's IPv4 address (in Network()).
func (h *Host) IP() string { return h.id.IP }

// Port is the SSH port (known after Start).
func (h *Host) Port() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.id.Port
}

// Hostname is the NetBIOS computer name.
func (h *Host) Hostname() string { return h.id.Hostname }

// FQDN is the fully qualified DNS name (the hostname when no DNSDomain).
func (h *Host) FQDN() string {
	if h.id.DNSDomain == "" {
		return h.id.Hostname
	}
	return h.id.Hostname + "." + h.id.DNSDomain
}

// Build is the OS build, "10.0.17763" or "10.0.20348".
func (h *Host) Build() string { return h.id.Build }

// ProductName is "Windows Server 2019 Datacenter" or the 2022 one.
func (h *Host) ProductName() string { return h.product }

// User is the account that may log in over SSH.
func (h *Host) User() string { return h.opts.User }

// Root is the Linux folder that the host's C:\ maps to.
func (h *Host) Root() string { return h.root }

// HNS is the host's simulated Host Networking Service (internal/simhns).
func (h *Host) HNS() *simhns.Store { return simhns.Open(h.root) }

// StateDir is the folder holding all of the host's state.
func (h *Host) StateDir() string { return h.stateDir }

// Path maps a Windows path on this host (C:\..., /C:/...) to its Linux file.
func (h *Host) Path(windowsPath string) (string, error) {
	return winpath.ResolveString(h.root, windowsPath)
}

// SCMSocket is the Unix socket of the host's service control manager.
func (h *Host) SCMSocket() string { return h.scmSock }

// SCM is a client of the host's service control manager.
func (h *Host) SCM() *simscm.Client { return simscm.Dial(h.scmSock) }

// LocalUser is a simulated local user of the host who is not an administrator
// (the nth such user, numbered from 1): what the user may do to files is
// decided by their ACLs, as on Windows. See package acl.
func (h *Host) LocalUser(name string, n int) *acl.User { return h.security.User(name, n) }

// profileDACL is what Windows gives a user's profile folder when it
// creates it at first logon: SYSTEM, Administrators and the user (here an
// administrator) full control, nothing inherited from C:\Users ("User
// profile folder permissions", as icacls shows C:\Users\<name>).
const profileDACL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"

// Profile is the SSH user's profile folder, C:\Users\<user>: the home
// folder of its SSH sessions and SFTP, writable only by administrators.
func (h *Host) Profile() string { return `C:\Users\` + h.opts.User }

// Security is the host's store of owners and ACLs.
func (h *Host) Security() *acl.Store { return h.security }

// Services is the host's service control manager itself (for faults and
// tests).
func (h *Host) Services() *scm.Manager { return h.scm }

// Up says whether the host is running (not rebooting, not closed).
func (h *Host) Up() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up
}

func (h *Host) hostInfo() simscm.HostInfo {
	h.mu.Lock()
	boot := h.bootTime
	h.mu.Unlock()
	return withSystem(simscm.HostInfo{
		Hostname:    h.id.Hostname,
		FQDN:        h.FQDN(),
		IPv4:        []string{h.id.IP},
		DefaultIPv4: h.id.IP,
		ProductName: h.product,
		Build:       h.id.Build,
		BootTime:    boot,
	}, h.settings.systemNow())
}

func (h *Host) execHost() winexec.Host {
	return winexec.Host{Root: h.root, SCMSocket: h.scmSock, Hostname: h.id.Hostname, User: h.opts.User, Store: h.opts.Store}
}

// installContainerd prepares a foreign containerd (Options.ForeignContainerd):
// the stand-in as containerd.exe and the containerd service, once.
func (h *Host) installContainerd() error {
	if !h.opts.ForeignContainerd {
		return nil
	}
	if h.opts.StandinBinary == "" {
		return fmt.Errorf("simulated host %s: a foreign containerd needs Options.StandinBinary", h.id.Hostname)
	}
	dst, err := h.Path(ContainerdPath)
	if err != nil {
		return err
	}
	if err := copyIfChanged(h.opts.StandinBinary, dst); err != nil {
		return fmt.Errorf("simulated host %s: installing containerd.exe from %s: %w", h.id.Hostname, h.opts.StandinBinary, err)
	}
	if err := h.writeContainerdConfig(); err != nil {
		return err
	}
	cfg := simscm.Config{
		Name:           "containerd",
		DisplayName:    "containerd container runtime",
		Description:    "containerd container runtime (simulated by winsim's stand-in)",
		BinaryPathName: wincmd.Join(ContainerdPath, "--run-service"),
		StartType:      plan.StartAuto,
		RecoveryActions: []simscm.Action{
			{Type: plan.RecoveryRestart, Delay: time.Second},
		},
		ResetPeriod: 24 * time.Hour,
	}
	if _, err := h.scm.Get("containerd"); errors.Is(err, simscm.ErrNotFound) {
		return h.scm.Create(cfg)
	}
	return nil
}

// ContainerdConfig is the containerd configuration a simulated host is
// prepared with (C:\Program Files\containerd\config.toml, containerd's
// default configuration path on Windows): its CRI plugin reads CNI
// configuration and plugins from winnode's folders, as docs/networking.md
// asks of a host.
const ContainerdConfig = `version = 2

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "C:/k/cni/bin"
  conf_dir = "C:/k/cni/config"
`

// writeContainerdConfig writes ContainerdConfig once (a test may change it
// afterwards).
func (h *Host) writeContainerdConfig() error {
	p, err := h.Path(`C:\Program Files\containerd\config.toml`)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return os.WriteFile(p, []byte(ContainerdConfig), 0o644)
}

// AuthorizeKey adds a public key to C:\ProgramData\ssh\administrators_authorized_keys
// (once).
func (h *Host) AuthorizeKey(pub ssh.PublicKey) error {
	file, err := h.Path(AuthorizedKeysPath)
	if err != nil {
		return err
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	existing, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("simulated host %s: reading %s: %w", h.id.Hostname, AuthorizedKeysPath, err)
	}
	for _, l := range strings.Split(string(existing), "\n") {
		if strings.TrimSpace(l) == line {
			return nil
		}
	}
	if len(existing) > 0 && !strings.HasSuffix(string(existing), "\n") {
		existing = append(existing, '\r', '\n')
	}
	return writeFileAtomic(file, append(existing, []byte(line+"\r\n")...), 0o600)
}
