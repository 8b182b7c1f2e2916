// Separate module: it pins the hcsshim release whose
// containerd-shim-runhcs-v1.exe (containerd's runtime for Windows
// containers) the payload carries.
//
// v0.15.0-rc.3 is the newest whose shim builds through the module proxy:
// from v0.15.0-rc.2 on, hcsshim requires github.com/Microsoft/cosesign1go
// v1.5.0 or later, whose module zips the proxy refuses (403); v1.4.0 is
// served, and rc.3 uses only what v1.4.0 has (rc.4 and v0.15.0 need
// v1.6.0's API). The shim links it only through pkg/securitypolicy
// (confidential containers), which process-isolated Windows containers
// never reach.
//
// The go.sum is filled by `GOOS=windows go get
// github.com/Microsoft/hcsshim/cmd/containerd-shim-runhcs-v1@VERSION`,
// never by `go mod tidy`: tidy follows OPA's test imports on every
// platform and stops at an ambiguous import of genproto.
module github.com/winnode/winnode/hack/payload/hcsshim

go 1.26.0

replace github.com/Microsoft/cosesign1go => github.com/Microsoft/cosesign1go v1.4.0

require github.com/Microsoft/hcsshim v0.15.0-rc.3
