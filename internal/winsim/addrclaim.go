package winsim

import (
	"os"
	"path/filepath"
	"syscall"
)

// claimAddress claims a loopback address for this process, machine-wide:
// an exclusive flock on a file named after the address in
// $TMPDIR/winsim-addresses, kept until the process ends (the kernel then
// drops it, even after a crash). It reports false when another process
// holds the claim.
//
// Why: every process counts its hosts' addresses from 127.0.0.10, and a
// host binds port 22 when it can. Without a claim, two processes (two test
// packages, a demo beside the tests) simulate hosts on the same address;
// when one of them takes a host down and starts it again (a reboot, or a
// restart from its state folder), the other's new host may have taken
// port 22 there meanwhile, and clients of the first host reach the
// second one.
//
// When the claim cannot be checked (no writable temporary folder), the
// address counts as free, as it did before claims existed.
func claimAddress(ip string) bool {
	dir := filepath.Join(os.TempDir(), "winsim-addresses")
	if err := os.Mkdir(dir, 0o777); err == nil {
		_ = os.Chmod(dir, 0o777|os.ModeSticky) // every user's simulated hosts share it
	}
	f, err := os.OpenFile(filepath.Join(dir, ip), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return err != syscall.EWOULDBLOCK
	}
	addrClaims = append(addrClaims, f) // held open: the claim lasts as long as the process
	return true
}

// addrClaims keeps the claimed files open; guarded by ipAlloc.
var addrClaims []*os.File
