//go:build windows

package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/windows/registry"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/preflight"
)

// The Windows side of the pre-flight checks (issue 28), run on Windows and
// in CI under Wine (hack/wine/test.sh): what the agent reads for them
// (free space on the system drive, the update build revision, the
// addresses DHCP gave, the keys of a pending restart) and the host's
// checks as `info --preflight` runs them. Where Wine lacks what Windows
// has, a "SKIPPED ASSERTION" line names it and the code path still runs.

// TestNativeSystemDriveFree: GetDiskFreeSpaceEx of %SystemDrive% answers
// (under Wine, C: is the prefix's drive_c folder on the Linux disk).
func TestNativeSystemDriveFree(t *testing.T) {
	p := openTestPlatform(t)
	free, err := p.SystemDriveFree(context.Background())
	if err != nil {
		t.Fatalf("SystemDriveFree: %v", err)
	}
	if free == 0 {
		t.Errorf("SystemDriveFree = 0: the system drive of a running Windows has some space free")
	}
	if r := preflight.CheckDisk(free, 1); r.Check != preflight.Disk || r.Message == "" {
		t.Errorf("CheckDisk(%d): %+v", free, r)
	}
}

// currentVersionKey holds the build's UBR (update build revision), which
// winver shows after the dot (20348.681).
const currentVersionKey = `SOFTWARE\Microsoft\Windows NT\CurrentVersion`

// TestNativeUBR: HostFacts reads UBR from the registry. Under Wine, whose
// registry has no UBR value, the test writes one into its own prefix and
// reads it back; on Windows it only reads (a patched Windows has one).
func TestNativeUBR(t *testing.T) {
	p := openTestPlatform(t)
	if !underWine() {
		f, err := p.HostFacts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if f.UBR <= 0 {
			t.Errorf("HostFacts.UBR = %d: Windows keeps the update build revision in HKLM\\%s UBR", f.UBR, currentVersionKey)
		}
		return
	}
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, currentVersionKey, registry.QUERY_VALUE|registry.SET_VALUE)
	if err != nil {
		t.Fatalf("opening HKLM\\%s: %v", currentVersionKey, err)
	}
	defer k.Close()
	old, _, oldErr := k.GetIntegerValue("UBR")
	if oldErr != nil {
		t.Logf("SKIPPED ASSERTION: Wine's registry has no UBR value (%v); the test writes one", oldErr)
	}
	t.Cleanup(func() {
		if oldErr == nil {
			_ = k.SetDWordValue("UBR", uint32(old))
		} else {
			_ = k.DeleteValue("UBR")
		}
	})
	if err := k.SetDWordValue("UBR", 681); err != nil {
		t.Fatalf("writing UBR: %v", err)
	}
	f, err := p.HostFacts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f.UBR != 681 {
		t.Errorf("HostFacts.UBR = %d, want 681 (the value written)", f.UBR)
	}
}

// TestNativeDHCPAddresses: the addresses DHCP gave (GetAdaptersAddresses'
// SuffixOrigin) are among the host's IPv4 addresses.
func TestNativeDHCPAddresses(t *testing.T) {
	p := openTestPlatform(t)
	f, err := p.HostFacts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range f.DHCPv4 {
		if !slices.Contains(f.IPv4, a) {
			t.Errorf("DHCP address %s is not among the host's addresses %v", a, f.IPv4)
		}
	}
	if underWine() && len(f.DHCPv4) == 0 {
		t.Logf("SKIPPED ASSERTION: Wine's GetAdaptersAddresses reports no address of DHCP origin (addresses %v); the lease of a Linux host is not Wine's", f.IPv4)
	}
	if len(f.DHCPv4) > 0 {
		if r := preflight.CheckAddressing(true, f.DHCPv4[0], f.DHCPv4); r.Result != plan.PreflightWarn {
			t.Errorf("a host listed by its DHCP address %s: %+v, want a warning", f.DHCPv4[0], r)
		}
	}
	if !slices.Contains(f.DHCPv4, "192.0.2.10") {
		if r := preflight.CheckAddressing(true, "192.0.2.10", f.DHCPv4); r.Result != plan.PreflightPass {
			t.Errorf("a host listed by an address DHCP did not give: %+v", r)
		}
	}
}

// pendingRestartKeys are the keys Windows creates while a restart is
// pending (servicing and Windows Update), as HostFacts reads them.
var pendingRestartKeys = []string{
	`SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending`,
	`SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired`,
}

// TestNativePendingRestart: HostFacts reports a pending restart while
// either key exists. Under Wine the test creates each key in its own
// prefix and deletes it again; on Windows, where creating them would tell
// the real host's tools a restart is pending, it only reads.
func TestNativePendingRestart(t *testing.T) {
	p := openTestPlatform(t)
	ctx := context.Background()
	if !underWine() {
		f, err := p.HostFacts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		exists := slices.ContainsFunc(pendingRestartKeys, keyExists)
		if f.UpdateRebootPending != exists {
			t.Errorf("HostFacts.UpdateRebootPending = %v, but a pending-restart key exists: %v", f.UpdateRebootPending, exists)
		}
		return
	}
	for _, path := range pendingRestartKeys {
		if keyExists(path) {
			t.Fatalf("HKLM\\%s exists in the Wine prefix before the test", path)
		}
		k, _, err := registry.CreateKey(registry.LOCAL_MACHINE, path, registry.ALL_ACCESS)
		if err != nil {
			t.Fatalf("creating HKLM\\%s: %v", path, err)
		}
		k.Close()
		f, err := p.HostFacts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !f.UpdateRebootPending {
			t.Errorf("HKLM\\%s exists, HostFacts.UpdateRebootPending is false", path)
		}
		if err := registry.DeleteKey(registry.LOCAL_MACHINE, path); err != nil {
			t.Fatalf("deleting HKLM\\%s: %v", path, err)
		}
		if f, err = p.HostFacts(ctx); err != nil || f.UpdateRebootPending {
			t.Errorf("HKLM\\%s deleted, HostFacts.UpdateRebootPending = %v (%v)", path, f.UpdateRebootPending, err)
		}
	}
}

// TestNativeHostPreflight runs the host's checks as `info --preflight`
// does, with no API server given: each host check reports once, with a
// known result; none crashes where Windows (or Wine) lacks a call.
func TestNativeHostPreflight(t *testing.T) {
	p := openTestPlatform(t)
	a := &Agent{Platform: p, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	ctx := context.Background()
	facts, err := p.HostFacts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var info plan.Info
	a.hostPreflight(ctx, &plan.PreflightRequest{MinFreeGiB: 1, Address: "192.0.2.10", ListedByIP: true}, facts, &info)
	kept, dropped := preflight.FromHost(info.Preflight)
	if dropped != 0 || len(kept) != len(preflight.HostChecks) {
		t.Errorf("host checks reported %+v: %d kept of %d, want one of each of %v", info.Preflight, len(kept), len(info.Preflight), preflight.HostChecks)
	}
	for _, r := range kept {
		t.Logf("%s: %s: %s", r.Check, r.Result, r.Message)
		if r.Check == preflight.APIServer && r.Result != plan.PreflightWarn {
			t.Errorf("the api-server check without an endpoint: %+v, want could not run", r)
		}
	}
	if info.System == nil || info.System.Clock.IsZero() {
		t.Errorf("info.system has no clock: %+v", info.System)
	}
	if _, err := a.Platform.WindowsFeature(ctx, plan.ContainersFeature); err != nil && !errors.Is(err, ErrFeatureUnknown) && underWine() {
		t.Logf("SKIPPED ASSERTION: Wine has no DISM API (%v): the containers-feature check reports that it could not run", err)
	}
}
