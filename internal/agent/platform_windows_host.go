//go:build windows

package agent

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
	"golang.org/x/sys/windows/svc"
)

// Windows optional features through the DISM API (dismapi.dll, in
// System32 since Windows 8 and Server 2012): DismGetFeatureInfo and
// DismEnableFeature on the online image, what Enable-WindowsOptionalFeature
// and `dism /online /enable-feature` use. It is chosen over WMI
// (Win32_OptionalFeature reports the state but cannot enable; MSFT_ServerFeature
// exists on Server only and needs COM) because one documented C API both
// reads the state and enables the feature, reports whether a restart is
// needed, and is called here without cgo. Wine has no dismapi.dll: there
// the calls fail with a clear error (the agent's Wine tests check it).

// ErrFeatureUnknown: Windows has no optional feature of that name
// (DISMAPI_E_UNKNOWN_FEATURE).
var ErrFeatureUnknown = errors.New("feature name is unknown")

const (
	dismOnlineImage             = "DISM_{53BFAE52-B167-4E2F-A258-0A37B57FF845}"
	dismLogErrors               = 0
	dismStateInstalled          = 4
	dismStateInstallPending     = 5
	errorSuccessRebootRequired  = 3010       // ERROR_SUCCESS_REBOOT_REQUIRED
	dismapiEUnknownFeature      = 0x800F080C // DISMAPI_E_UNKNOWN_FEATURE
	loadLibrarySearchSystem32   = 0x00000800
	shutdownReasonReconfigure   = 0x00020000 | 0x00000004 | 0x80000000 // SHTDN_REASON_MAJOR_OPERATINGSYSTEM | MINOR_RECONFIG | FLAG_PLANNED
	defenderExclusionsPolicyKey = `SOFTWARE\Policies\Microsoft\Windows Defender\Exclusions`
)

var (
	dismOnce sync.Once
	dismErr  error
	dismAPI  struct {
		initialize, openSession, closeSession, getFeatureInfo, enableFeature, deleteFn *windows.Proc
	}
)

// loadDISM loads dismapi.dll from System32 and initializes the API once
// per process (DismInitialize must be called once; DismShutdown is left to
// the process's end).
func loadDISM() error {
	dismOnce.Do(func() {
		h, err := windows.LoadLibraryEx("dismapi.dll", 0, loadLibrarySearchSystem32)
		if err != nil {
			dismErr = fmt.Errorf("loading the DISM API (dismapi.dll): %w", err)
			return
		}
		dll := &windows.DLL{Name: "dismapi.dll", Handle: h}
		for name, p := range map[string]**windows.Proc{
			"DismInitialize": &dismAPI.initialize, "DismOpenSession": &dismAPI.openSession, "DismCloseSession": &dismAPI.closeSession,
			"DismGetFeatureInfo": &dismAPI.getFeatureInfo, "DismEnableFeature": &dismAPI.enableFeature, "DismDelete": &dismAPI.deleteFn,
		} {
			if *p, err = dll.FindProc(name); err != nil {
				dismErr = fmt.Errorf("the DISM API has no %s: %w", name, err)
				return
			}
		}
		if hr, _, _ := dismAPI.initialize.Call(dismLogErrors, 0, 0); int32(hr) < 0 {
			dismErr = fmt.Errorf("DismInitialize: HRESULT 0x%08X", uint32(hr))
		}
	})
	return dismErr
}

// withDISMSession runs do with a session on the running Windows.
func withDISMSession(do func(session uintptr) error) error {
	if err := loadDISM(); err != nil {
		return err
	}
	var session uint32
	if hr, _, _ := dismAPI.openSession.Call(uintptr(unsafe.Pointer(utf16(dismOnlineImage))), 0, 0, uintptr(unsafe.Pointer(&session))); int32(hr) < 0 {
		return fmt.Errorf("DismOpenSession (online image): HRESULT 0x%08X", uint32(hr))
	}
	defer dismAPI.closeSession.Call(uintptr(session))
	return do(uintptr(session))
}

// dismFeatureInfo is the start of DISM's DismFeatureInfo (declared with
// pack 1 in DismApi.h: its first two fields sit at the same offsets as
// here, 0 and 8).
type dismFeatureInfo struct {
	FeatureName  *uint16
	FeatureState uint32
}

func (n *native) WindowsFeature(_ context.Context, name string) (FeatureState, error) {
	var state FeatureState
	err := withDISMSession(func(session uintptr) error {
		var info *dismFeatureInfo
		hr, _, _ := dismAPI.getFeatureInfo.Call(session, uintptr(unsafe.Pointer(utf16(name))), 0, 0, uintptr(unsafe.Pointer(&info)))
		switch {
		case uint32(hr) == dismapiEUnknownFeature:
			return fmt.Errorf("Windows feature %s: %w", name, ErrFeatureUnknown)
		case int32(hr) < 0:
			return fmt.Errorf("DismGetFeatureInfo %s: HRESULT 0x%08X", name, uint32(hr))
		}
		defer dismAPI.deleteFn.Call(uintptr(unsafe.Pointer(info)))
		switch info.FeatureState {
		case dismStateInstalled:
			state = FeatureEnabled
		case dismStateInstallPending:
			state = FeatureEnablePending
		default:
			state = FeatureDisabled
		}
		return nil
	})
	return state, err
}

func (n *native) EnableWindowsFeature(_ context.Context, name string) (bool, error) {
	restart := false
	err := withDISMSession(func(session uintptr) error {
		// No source, LimitAccess false (Windows Update may supply the
		// payload), EnableAll true (the features it needs too).
		hr, _, _ := dismAPI.enableFeature.Call(session, uintptr(unsafe.Pointer(utf16(name))), 0, 0, 0, 0, 0, 1, 0, 0, 0)
		switch {
		case uint32(hr) == errorSuccessRebootRequired:
			restart = true
		case uint32(hr) == dismapiEUnknownFeature:
			return fmt.Errorf("Windows feature %s: %w", name, ErrFeatureUnknown)
		case int32(hr) < 0:
			return fmt.Errorf("DismEnableFeature %s: HRESULT 0x%08X", name, uint32(hr))
		}
		return nil
	})
	return restart, err
}

// rebootKey is a volatile registry key (REG_OPTION_VOLATILE: Windows
// keeps it in memory only) that Reboot creates: it exists from the restart
// request until Windows starts again, which is what RebootPending reads.
const rebootKey = `SOFTWARE\winnode-restart-requested`

var procRegCreateKeyExW = windows.NewLazySystemDLL("advapi32.dll").NewProc("RegCreateKeyExW")

// Reboot: InitiateSystemShutdownEx with a timeout, after enabling the
// SeShutdownPrivilege an elevated administrator holds but has disabled.
func (n *native) Reboot(_ context.Context, reason string, delay time.Duration) error {
	if err := enablePrivilege("SeShutdownPrivilege"); err != nil {
		return fmt.Errorf("restarting the host: %w", err)
	}
	var key windows.Handle
	const regOptionVolatile = 1
	if r, _, _ := procRegCreateKeyExW.Call(uintptr(windows.HKEY_LOCAL_MACHINE), uintptr(unsafe.Pointer(utf16(rebootKey))), 0, 0,
		regOptionVolatile, uintptr(windows.KEY_WRITE), 0, uintptr(unsafe.Pointer(&key)), 0); r != 0 {
		return fmt.Errorf("recording the restart (volatile key HKLM\\%s): %w", rebootKey, windows.Errno(r))
	}
	windows.RegCloseKey(key)
	err := windows.InitiateSystemShutdownEx(nil, utf16(reason), uint32(delay/time.Second), true, true, shutdownReasonReconfigure)
	if err != nil {
		return fmt.Errorf("restarting the host (InitiateSystemShutdownEx): %w", err)
	}
	return nil
}

func (n *native) RebootPending(context.Context) (bool, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, rebootKey, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	k.Close()
	return true, nil
}

func enablePrivilege(name string) error {
	var token windows.Token
	if err := windows.OpenProcessToken(windows.CurrentProcess(), windows.TOKEN_ADJUST_PRIVILEGES|windows.TOKEN_QUERY, &token); err != nil {
		return err
	}
	defer token.Close()
	var luid windows.LUID
	if err := windows.LookupPrivilegeValue(nil, utf16(name), &luid); err != nil {
		return err
	}
	tp := windows.Tokenprivileges{PrivilegeCount: 1}
	tp.Privileges[0] = windows.LUIDAndAttributes{Luid: luid, Attributes: windows.SE_PRIVILEGE_ENABLED}
	return windows.AdjustTokenPrivileges(token, false, &tp, 0, nil, nil)
}

// DefenderRunning: Microsoft Defender Antivirus is the service WinDefend.
func (n *native) DefenderRunning(ctx context.Context) (bool, error) {
	s, err := n.m.OpenService("WinDefend")
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer s.Close()
	st, err := s.Query()
	if err != nil {
		return false, err
	}
	return st.State == svc.Running, nil
}

// Defender's process exclusions are set as Group Policy does it, in the
// documented policy values (Microsoft Defender Antivirus ADMX, "Process
// Exclusions"): HKLM\SOFTWARE\Policies\Microsoft\Windows Defender\Exclusions
// \Processes, one value per program (data "0"), with Exclusions_Processes
// = 1 turning the list on. Defender reads policy changes as they happen;
// the PowerShell cmdlets (Add-MpPreference) would need COM and WMI.
func (n *native) AddDefenderExclusion(_ context.Context, program string) error {
	k, _, err := registry.CreateKey(registry.LOCAL_MACHINE, defenderExclusionsPolicyKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("Defender's exclusion policy: %w", err)
	}
	defer k.Close()
	if err := k.SetDWordValue("Exclusions_Processes", 1); err != nil {
		return fmt.Errorf("Defender's exclusion policy: %w", err)
	}
	p, _, err := registry.CreateKey(registry.LOCAL_MACHINE, defenderExclusionsPolicyKey+`\Processes`, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("Defender's process exclusions: %w", err)
	}
	defer p.Close()
	return p.SetStringValue(program, "0")
}

func (n *native) RemoveDefenderExclusion(_ context.Context, program string) error {
	p, err := registry.OpenKey(registry.LOCAL_MACHINE, defenderExclusionsPolicyKey+`\Processes`, registry.SET_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("Defender's process exclusions: %w", err)
	}
	defer p.Close()
	if err := p.DeleteValue(program); err != nil && !errors.Is(err, registry.ErrNotExist) {
		return fmt.Errorf("Defender's process exclusions: %w", err)
	}
	return nil
}

// openRootStore opens LocalMachine\Root for writing.
func openRootStore() (windows.Handle, error) {
	store, err := windows.CertOpenStore(windows.CERT_STORE_PROV_SYSTEM, 0, 0, windows.CERT_SYSTEM_STORE_LOCAL_MACHINE, uintptr(unsafe.Pointer(utf16("ROOT"))))
	if err != nil {
		return 0, fmt.Errorf("opening LocalMachine\\Root: %w", err)
	}
	return store, nil
}

func (n *native) AddRootCertificate(_ context.Context, der []byte) (string, bool, error) {
	sum := sha1.Sum(der)
	thumbprint := hex.EncodeToString(sum[:])
	store, err := openRootStore()
	if err != nil {
		return "", false, err
	}
	defer windows.CertCloseStore(store, 0)
	cert, err := windows.CertCreateCertificateContext(windows.X509_ASN_ENCODING|windows.PKCS_7_ASN_ENCODING, &der[0], uint32(len(der)))
	if err != nil {
		return "", false, fmt.Errorf("reading certificate %s: %w", thumbprint, err)
	}
	defer windows.CertFreeCertificateContext(cert)
	err = windows.CertAddCertificateContextToStore(store, cert, windows.CERT_STORE_ADD_NEW, nil)
	switch {
	case errors.Is(err, windows.Errno(windows.CRYPT_E_EXISTS)):
		return thumbprint, false, nil
	case err != nil:
		return "", false, fmt.Errorf("adding certificate %s to LocalMachine\\Root: %w", thumbprint, err)
	}
	return thumbprint, true, nil
}

func (n *native) RemoveRootCertificate(_ context.Context, thumbprint string) error {
	hash, err := hex.DecodeString(thumbprint)
	if err != nil || len(hash) != sha1.Size {
		return fmt.Errorf("thumbprint %q is not a SHA-1 hash", thumbprint)
	}
	store, err := openRootStore()
	if err != nil {
		return err
	}
	defer windows.CertCloseStore(store, 0)
	blob := windows.CryptHashBlob{Size: uint32(len(hash)), Data: &hash[0]}
	cert, err := windows.CertFindCertificateInStore(store, windows.X509_ASN_ENCODING|windows.PKCS_7_ASN_ENCODING, 0, windows.CERT_FIND_SHA1_HASH, unsafe.Pointer(&blob), nil)
	if err != nil {
		if errors.Is(err, windows.Errno(windows.CRYPT_E_NOT_FOUND)) {
			return nil
		}
		return fmt.Errorf("finding certificate %s in LocalMachine\\Root: %w", thumbprint, err)
	}
	// CertDeleteCertificateFromStore frees the context, even on failure.
	if err := windows.CertDeleteCertificateFromStore(cert); err != nil {
		return fmt.Errorf("removing certificate %s from LocalMachine\\Root: %w", thumbprint, err)
	}
	return nil
}

// PipeAnswers opens the pipe as a client would; a pipe busy with another
// client exists and answers.
func (n *native) PipeAnswers(_ context.Context, name string) error {
	h, err := windows.CreateFile(utf16(name), windows.GENERIC_READ|windows.GENERIC_WRITE, 0, nil, windows.OPEN_EXISTING, 0, 0)
	if errors.Is(err, windows.ERROR_PIPE_BUSY) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	return windows.CloseHandle(h)
}
