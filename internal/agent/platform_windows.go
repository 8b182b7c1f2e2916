//go:build windows

package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// native is the Platform of a real Windows host: the service control manager
// through golang.org/x/sys/windows/svc/mgr, host facts from the OS.
type native struct {
	m *mgr.Mgr
}

func openNative() (Platform, error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, fmt.Errorf("connecting to the service control manager (run the agent as an administrator): %w", err)
	}
	return &native{m: m}, nil
}

// Open returns this Windows host's platform. The Windows build never looks
// for a simulated service manager: a winsim host runs the Linux build.
func Open() (Platform, error) { return openNative() }

func (n *native) Close() error { return n.m.Disconnect() }

func (n *native) LocalPath(p winpath.Path) (string, error) { return p.String(), nil }

func (n *native) open(name string) (*mgr.Service, error) {
	s, err := n.m.OpenService(name)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return nil, fmt.Errorf("service %s: %w", name, ErrServiceNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("opening service %s: %w", name, err)
	}
	return s, nil
}

var startTypes = map[uint32]plan.StartType{
	mgr.StartAutomatic: plan.StartAuto,
	mgr.StartManual:    plan.StartManual,
	mgr.StartDisabled:  plan.StartDisabled,
}

func startTypeCode(t plan.StartType) uint32 {
	for code, st := range startTypes {
		if st == t {
			return code
		}
	}
	return mgr.StartManual
}

var states = map[svc.State]ServiceState{
	svc.Stopped:         Stopped,
	svc.StartPending:    StartPending,
	svc.Running:         Running,
	svc.StopPending:     StopPending,
	svc.ContinuePending: StartPending,
	svc.PausePending:    StopPending,
	svc.Paused:          Stopped,
}

func (n *native) Query(_ context.Context, name string) (ServiceConfig, ServiceState, error) {
	s, err := n.open(name)
	if err != nil {
		return ServiceConfig{}, "", err
	}
	defer s.Close()
	c, err := queryConfig(s.Handle)
	if err != nil {
		return ServiceConfig{}, "", fmt.Errorf("service %s: reading its configuration: %w", name, err)
	}
	status, err := s.Query()
	if err != nil {
		return ServiceConfig{}, "", fmt.Errorf("service %s: reading its state: %w", name, err)
	}
	out := ServiceConfig{
		Name: name, DisplayName: c.DisplayName, Description: c.Description,
		BinaryPathName: c.BinaryPathName, Dependencies: c.Dependencies, StartType: startTypes[c.StartType],
	}
	actions, err := s.RecoveryActions()
	if errors.Is(err, windows.ERROR_INVALID_LEVEL) {
		out.RecoveryUnknown = true
		actions, err = nil, nil
	}
	if err != nil {
		return ServiceConfig{}, "", fmt.Errorf("service %s: reading its recovery actions: %w", name, err)
	}
	for _, a := range actions {
		t := plan.RecoveryNone
		if a.Type == mgr.ServiceRestart {
			t = plan.RecoveryRestart
		}
		out.RecoveryActions = append(out.RecoveryActions, RecoveryAction{Type: t, Delay: a.Delay})
	}
	if len(actions) > 0 {
		reset, err := s.ResetPeriod()
		if err != nil {
			return ServiceConfig{}, "", fmt.Errorf("service %s: reading its recovery reset period: %w", name, err)
		}
		out.ResetPeriod = time.Duration(reset) * time.Second
	}
	if out.Environment, err = readEnvironment(name); err != nil {
		return ServiceConfig{}, "", err
	}
	return out, states[status.State], nil
}

// svcConfig is the part of a service's configuration the agent compares.
type svcConfig struct {
	StartType      uint32
	BinaryPathName string
	Dependencies   []string
	DisplayName    string
	Description    string
}

// queryConfig reads a service's configuration and description. It does not
// use mgr.Service.Config, which also asks for the delayed-start and SID
// settings the agent never sets (and fails where the SCM lacks those info
// levels, as Wine's does).
func queryConfig(h windows.Handle) (svcConfig, error) {
	var c svcConfig
	n := uint32(1024)
	for {
		b := make([]byte, n)
		p := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&b[0]))
		err := windows.QueryServiceConfig(h, p, n, &n)
		if errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) && n > uint32(len(b)) {
			continue
		}
		if err != nil {
			return c, err
		}
		c.StartType = p.StartType
		c.BinaryPathName = windows.UTF16PtrToString(p.BinaryPathName)
		c.DisplayName = windows.UTF16PtrToString(p.DisplayName)
		c.Dependencies = multiString(p.Dependencies)
		break
	}
	n = 1024
	for {
		b := make([]byte, n)
		err := windows.QueryServiceConfig2(h, windows.SERVICE_CONFIG_DESCRIPTION, &b[0], n, &n)
		if errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) && n > uint32(len(b)) {
			continue
		}
		if err != nil {
			return c, err
		}
		c.Description = windows.UTF16PtrToString((*windows.SERVICE_DESCRIPTION)(unsafe.Pointer(&b[0])).Description)
		return c, nil
	}
}

// multiString splits a double-NUL-terminated UTF-16 list.
func multiString(p *uint16) []string {
	var out []string
	if p == nil {
		return out
	}
	for {
		s := windows.UTF16PtrToString(p)
		if s == "" {
			return out
		}
		out = append(out, s)
		p = (*uint16)(unsafe.Add(unsafe.Pointer(p), (len(windows.StringToUTF16(s)))*2))
	}
}

// Create installs the service with the command line exactly as composed
// (mgr.CreateService would quote it again as one executable path), then
// sets description, recovery and environment as Update does.
func (n *native) Create(ctx context.Context, c ServiceConfig) error {
	h, err := windows.CreateService(n.m.Handle, utf16(c.Name), utf16(c.DisplayName), windows.SERVICE_ALL_ACCESS,
		windows.SERVICE_WIN32_OWN_PROCESS, startTypeCode(c.StartType), windows.SERVICE_ERROR_NORMAL,
		utf16(c.BinaryPathName), nil, nil, stringBlock(c.Dependencies), nil, nil)
	if err != nil {
		return fmt.Errorf("creating service %s: %w", c.Name, err)
	}
	s := &mgr.Service{Name: c.Name, Handle: h}
	defer s.Close()
	return configure2(s, c)
}

// Update rewrites the whole configuration. It calls ChangeServiceConfig
// itself because mgr.UpdateConfig cannot clear the dependencies (an empty
// list means "no change" there).
func (n *native) Update(_ context.Context, c ServiceConfig) error {
	s, err := n.open(c.Name)
	if err != nil {
		return err
	}
	defer s.Close()
	deps := stringBlock(c.Dependencies)
	if deps == nil {
		deps = &[]uint16{0, 0}[0] // the empty list
	}
	err = windows.ChangeServiceConfig(s.Handle, windows.SERVICE_NO_CHANGE, startTypeCode(c.StartType), windows.SERVICE_NO_CHANGE,
		utf16(c.BinaryPathName), nil, nil, deps, nil, nil, utf16(c.DisplayName))
	if err != nil {
		return fmt.Errorf("reconfiguring service %s: %w", c.Name, err)
	}
	return configure2(s, c)
}

// configure2 sets what ChangeServiceConfig2 and the registry hold:
// description, failure actions (also on non-crash failures, so a service
// that exits with an error is restarted too) and environment.
func configure2(s *mgr.Service, c ServiceConfig) error {
	desc := windows.SERVICE_DESCRIPTION{Description: utf16(c.Description)}
	if err := windows.ChangeServiceConfig2(s.Handle, windows.SERVICE_CONFIG_DESCRIPTION, (*byte)(unsafe.Pointer(&desc))); err != nil {
		return fmt.Errorf("service %s: setting its description: %w", c.Name, err)
	}
	if len(c.RecoveryActions) == 0 {
		if err := s.ResetRecoveryActions(); err != nil {
			return fmt.Errorf("service %s: clearing its recovery actions: %w", c.Name, err)
		}
	} else {
		var actions []mgr.RecoveryAction
		for _, a := range c.RecoveryActions {
			t := mgr.NoAction
			if a.Type == plan.RecoveryRestart {
				t = mgr.ServiceRestart
			}
			actions = append(actions, mgr.RecoveryAction{Type: t, Delay: a.Delay})
		}
		if err := s.SetRecoveryActions(actions, uint32(c.ResetPeriod/time.Second)); err != nil {
			return fmt.Errorf("service %s: setting its recovery actions: %w", c.Name, err)
		}
		// Optional hardening: an SCM without this setting (Wine) keeps
		// recovery for crashes only, which is still correct.
		if err := s.SetRecoveryActionsOnNonCrashFailures(true); err != nil && !errors.Is(err, windows.ERROR_INVALID_LEVEL) {
			return fmt.Errorf("service %s: enabling recovery on non-crash failures: %w", c.Name, err)
		}
	}
	return writeEnvironment(c.Name, c.Environment)
}

func (n *native) Start(_ context.Context, name string) error {
	s, err := n.open(name)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Start(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
		return fmt.Errorf("starting service %s: %w", name, err)
	}
	return nil
}

func (n *native) Stop(_ context.Context, name string) error {
	s, err := n.open(name)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Control(svc.Stop); err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return fmt.Errorf("stopping service %s: %w", name, err)
	}
	return nil
}

func (n *native) Delete(_ context.Context, name string) error {
	s, err := n.open(name)
	if errors.Is(err, ErrServiceNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Delete(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_MARKED_FOR_DELETE) {
		return fmt.Errorf("deleting service %s: %w", name, err)
	}
	return nil
}

func (n *native) Dependents(_ context.Context, name string) ([]string, error) {
	s, err := n.open(name)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	deps, err := s.ListDependentServices(svc.AnyActivity)
	if err != nil {
		return nil, fmt.Errorf("listing services that depend on %s: %w", name, err)
	}
	return deps, nil
}

// The environment of a service lives in the registry, as REG_MULTI_SZ
// "Environment" under the service's key.
func serviceKey(name string) string { return `SYSTEM\CurrentControlSet\Services\` + name }

func readEnvironment(name string) ([]string, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, serviceKey(name), registry.QUERY_VALUE)
	if err != nil {
		return nil, fmt.Errorf("service %s: opening its registry key: %w", name, err)
	}
	defer k.Close()
	env, _, err := k.GetStringsValue("Environment")
	if errors.Is(err, registry.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("service %s: reading its environment: %w", name, err)
	}
	return env, nil
}

func writeEnvironment(name string, env []string) error {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, serviceKey(name), registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("service %s: opening its registry key: %w", name, err)
	}
	defer k.Close()
	if len(env) == 0 {
		if err := k.DeleteValue("Environment"); err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fmt.Errorf("service %s: clearing its environment: %w", name, err)
		}
		return nil
	}
	if err := k.SetStringsValue("Environment", env); err != nil {
		return fmt.Errorf("service %s: setting its environment: %w", name, err)
	}
	return nil
}

func (n *native) HostFacts(context.Context) (HostFacts, error) {
	var f HostFacts
	var err error
	if f.Hostname, err = os.Hostname(); err != nil {
		return f, fmt.Errorf("reading the host name: %w", err)
	}
	f.FQDN = f.Hostname
	buf := make([]uint16, 256)
	size := uint32(len(buf))
	if err := windows.GetComputerNameEx(windows.ComputerNameDnsFullyQualified, &buf[0], &size); err == nil {
		f.FQDN = windows.UTF16ToString(buf[:size])
	}
	if f.IPv4, f.DefaultIPv4, f.DHCPv4, err = ipv4Addresses(); err != nil {
		return f, err
	}
	v := windows.RtlGetVersion()
	f.Build = fmt.Sprintf("%d.%d.%d", v.MajorVersion, v.MinorVersion, v.BuildNumber)
	if k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Windows NT\CurrentVersion`, registry.QUERY_VALUE); err == nil {
		f.ProductName, _, _ = k.GetStringValue("ProductName")
		if ubr, _, err := k.GetIntegerValue("UBR"); err == nil {
			f.UBR = int(ubr)
		}
		k.Close()
	}
	f.UpdateRebootPending = keyExists(`SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending`) ||
		keyExists(`SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired`)
	return f, nil
}

// keyExists says whether a key of HKEY_LOCAL_MACHINE exists (Windows
// creates the keys above while a restart is pending, and deletes them at
// the restart).
func keyExists(path string) bool {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, path, registry.QUERY_VALUE)
	if err != nil {
		return false
	}
	k.Close()
	return true
}

// ipv4Addresses lists the IPv4 unicast addresses of adapters that are up;
// the default one is the first address of the first adapter with a gateway;
// dhcp those whose suffix DHCP gave (IP_ADAPTER_UNICAST_ADDRESS's
// SuffixOrigin IpSuffixOriginDhcp).
func ipv4Addresses() (addrs []string, def string, dhcp []string, err error) {
	size := uint32(15000)
	var buf []byte
	for {
		buf = make([]byte, size)
		err := windows.GetAdaptersAddresses(windows.AF_INET, windows.GAA_FLAG_INCLUDE_GATEWAYS|windows.GAA_FLAG_SKIP_ANYCAST|windows.GAA_FLAG_SKIP_MULTICAST,
			0, (*windows.IpAdapterAddresses)(unsafe.Pointer(&buf[0])), &size)
		if errors.Is(err, windows.ERROR_BUFFER_OVERFLOW) {
			continue
		}
		if errors.Is(err, windows.ERROR_NO_DATA) {
			return []string{}, "", nil, nil
		}
		if err != nil {
			return nil, "", nil, fmt.Errorf("listing network adapters: %w", err)
		}
		break
	}
	addrs = []string{}
	for a := (*windows.IpAdapterAddresses)(unsafe.Pointer(&buf[0])); a != nil; a = a.Next {
		if a.OperStatus != windows.IfOperStatusUp || a.IfType == windows.IF_TYPE_SOFTWARE_LOOPBACK {
			continue
		}
		for u := a.FirstUnicastAddress; u != nil; u = u.Next {
			ip := u.Address.IP()
			if ip == nil || ip.To4() == nil || ip.IsLoopback() {
				continue
			}
			s := ip.String()
			if !slices.Contains(addrs, s) {
				addrs = append(addrs, s)
			}
			if u.SuffixOrigin == windows.IpSuffixOriginDhcp && !slices.Contains(dhcp, s) {
				dhcp = append(dhcp, s)
			}
			if def == "" && a.FirstGatewayAddress != nil {
				def = s
			}
		}
	}
	return addrs, def, dhcp, nil
}

// SystemDriveFree asks GetDiskFreeSpaceEx for the free bytes of the
// system drive (%SystemDrive%, C: by default) available to this account.
func (n *native) SystemDriveFree(context.Context) (uint64, error) {
	drive := os.Getenv("SystemDrive")
	if drive == "" {
		drive = "C:"
	}
	p, err := windows.UTF16PtrFromString(drive + `\`)
	if err != nil {
		return 0, err
	}
	var free, total, totalFree uint64
	if err := windows.GetDiskFreeSpaceEx(p, &free, &total, &totalFree); err != nil {
		return 0, fmt.Errorf("GetDiskFreeSpaceEx %s: %w", drive, err)
	}
	return free, nil
}

func (n *native) Clock(context.Context) (time.Time, error) { return time.Now(), nil }

func (n *native) Dial(ctx context.Context, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", address)
}

// Firewall rules are managed with netsh (run directly, each argument
// separate, names made only of [a-z0-9-] by plan validation).
func netsh(ctx context.Context, args ...string) (string, error) {
	exe := filepath.Join(os.Getenv("SystemRoot"), "System32", "netsh.exe")
	out, err := exec.CommandContext(ctx, exe, append([]string{"advfirewall", "firewall"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("netsh advfirewall firewall %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func ruleName(fw plan.FirewallPort) string { return "winnode-" + fw.Name }

func (n *native) OpenFirewallPort(ctx context.Context, fw plan.FirewallPort) error {
	_ = n.CloseFirewallPort(ctx, fw) // replace, so a changed port takes effect
	_, err := netsh(ctx, "add", "rule", "name="+ruleName(fw), "dir=in", "action=allow",
		"protocol="+string(fw.Protocol), "localport="+strconv.Itoa(fw.Port))
	return err
}

func (n *native) CloseFirewallPort(ctx context.Context, fw plan.FirewallPort) error {
	_, err := netsh(ctx, "delete", "rule", "name="+ruleName(fw))
	if err != nil && strings.Contains(err.Error(), "No rules match") {
		return nil
	}
	return err
}

func utf16(s string) *uint16 {
	p, err := windows.UTF16PtrFromString(s)
	if err != nil {
		return nil // a NUL byte: rejected by plan validation before here
	}
	return p
}

// stringBlock is a double-NUL-terminated list, as the SCM wants
// dependencies; nil for an empty list.
func stringBlock(ss []string) *uint16 {
	if len(ss) == 0 {
		return nil
	}
	var b []uint16
	for _, s := range ss {
		b = append(b, windows.StringToUTF16(s)...)
	}
	b = append(b, 0)
	return &b[0]
}
