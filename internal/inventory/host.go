package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// DefaultPort is the SSH port of a host that names none.
const DefaultPort = 22

// Host is one Windows host to make a node of, checked and normalized by
// NewHost: what a windows-instances entry or `winnodectl add` flags say.
type Host struct {
	// Address is the normalized address: an IPv4 address, or a DNS name in
	// lower case without a trailing dot.
	Address string
	// Username is the account to log in with.
	Username string
	// Port is the SSH port.
	Port int32
	// HostKeyFingerprint, when set, is the SHA256 fingerprint of the SSH
	// host key the host must present from the first connection on
	// ("SHA256:" and 43 base64 characters, as ssh-keygen -lf prints it).
	HostKeyFingerprint string
	// ContainerRuntime is who runs the host's container runtime, when the
	// entry or winnodectl says (ParseContainerRuntime); "": the operator's
	// default.
	ContainerRuntime winnodev1.ContainerRuntime
}

// ContainerRuntimeHelp is the help of --container-runtime (the operator's
// and winnodectl add's).
const ContainerRuntimeHelp = "who runs each host's container runtime: managed (winnode installs containerd, with the cluster's registries, proxy and CAs, and the Windows Containers feature) or existing (the host's own containerd, which winnode relies on and never touches)"

// ParseContainerRuntime reads a container runtime mode as an administrator
// writes it (--container-runtime, a windows-instances entry's
// containerRuntime): managed or existing, in any case.
func ParseContainerRuntime(s string) (winnodev1.ContainerRuntime, error) {
	switch strings.ToLower(s) {
	case "managed":
		return winnodev1.ContainerRuntimeManaged, nil
	case "existing":
		return winnodev1.ContainerRuntimeExisting, nil
	}
	return "", fmt.Errorf("%q: want managed or existing", clip(s))
}

// fingerprintRe is an OpenSSH SHA256 fingerprint, as the CRD accepts it.
var fingerprintRe = regexp.MustCompile(`\ASHA256:[A-Za-z0-9+/]{43}\z`)

// usernameRe is the accepted set of user names: letters, digits, '.', '_',
// '-' and '@' (user@domain), not starting with '.', '-' or '@'. It excludes
// quotes, spaces, backslashes (DOMAIN\user: use user@domain), and every
// character with a meaning to cmd.exe or PowerShell, so a user name can
// never change the meaning of anything it ends up in. It is the same as the
// CRD's validation pattern.
var usernameRe = regexp.MustCompile(`\A[A-Za-z0-9_][A-Za-z0-9._@-]*\z`)

// maxUsernameLen is the CRD's limit (user@domain names).
const maxUsernameLen = 104

var portRe = regexp.MustCompile(`\A[0-9]{1,5}\z`)

// NewHost checks a host as an administrator wrote it and returns it
// normalized: address as a ConfigMap key (NormalizeAddress), username, and
// port as decimal text (winnodectl passes its --port flag as
// strconv.Itoa), and the expected host key fingerprint ("" for none: trust
// on first use). Spaces around username, port and fingerprint are ignored. Its errors are
// EntryError for the address as written, and never repeat more than 64
// characters of what was given.
func NewHost(address, username, port, hostKey string) (Host, error) {
	bad := func(format string, args ...any) (Host, error) {
		return Host{}, EntryError{Key: address, Reason: fmt.Sprintf(format, args...)}
	}
	addr, err := NormalizeAddress(address)
	if err != nil {
		return bad("%v", err)
	}
	username, port = strings.TrimSpace(username), strings.TrimSpace(port)
	switch {
	case username == "":
		return bad("username is empty")
	case len(username) > maxUsernameLen:
		return bad("username is longer than %d characters", maxUsernameLen)
	case !usernameRe.MatchString(username):
		return bad("username %q has characters that are not allowed; use letters, digits, '.', '_', '-' and '@' (user@domain instead of DOMAIN\\user), not starting with '.', '-' or '@'", clip(username))
	}
	if !portRe.MatchString(port) {
		return bad("port %q is not a number from 1 to 65535", clip(port))
	}
	n, _ := strconv.Atoi(port)
	if n < 1 || n > 65535 {
		return bad("port %d is not from 1 to 65535", n)
	}
	hostKey = strings.TrimSpace(hostKey)
	if hostKey != "" && !fingerprintRe.MatchString(hostKey) {
		return bad("host key %q is not a SHA256 fingerprint; write SHA256: and 43 base64 characters, as `ssh-keygen -lf C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub` prints it on the host", clip(hostKey))
	}
	return Host{Address: addr, Username: username, Port: int32(n), HostKeyFingerprint: hostKey}, nil
}

// clip shortens a quoted piece of input in an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// NormalizeAddress checks a host address and returns its canonical form: an
// IPv4 address as netip prints it, or a DNS name (RFC 1123) in lower case
// without a trailing dot. Two spellings of one host give the same result.
func NormalizeAddress(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty address")
	}
	if strings.ContainsAny(s, ":[]") {
		return "", fmt.Errorf("%q looks like an IPv6 address; only IPv4 addresses and DNS names are supported", clip(s))
	}
	if looksNumeric(s) {
		ip, err := netip.ParseAddr(s)
		if err != nil || !ip.Is4() {
			return "", fmt.Errorf("%q is not a valid IPv4 address", clip(s))
		}
		switch {
		case ip.IsUnspecified():
			return "", fmt.Errorf("%s is the unspecified address, not a host", s)
		case ip.IsMulticast(), ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
			return "", fmt.Errorf("%s is a multicast or broadcast address, not a host", s)
		}
		return ip.String(), nil
	}
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("%q is neither an IPv4 address nor a DNS name: %s", clip(s), strings.Join(errs, "; "))
	}
	return name, nil
}

// looksNumeric reports whether every dot-separated label is digits: such a
// name can only be meant as an IPv4 address ("10.0.0.256" is a typo, not a
// host name).
func looksNumeric(s string) bool {
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" {
			return false
		}
		for _, r := range label {
			if r < '0' || r > '9' {
				return false
			}
		}
	}
	return true
}

// InstanceName is the WindowsInstance name for a normalized address: the
// address with dots as dashes, cut to fit, and 10 hex digits of its SHA-256,
// e.g. "10-1-42-1-5b0c2e8f3a". It is a DNS-1123 label (so it also fits in a
// label value), deterministic, and distinct for distinct addresses even when
// the readable part is cut.
func InstanceName(address string) string {
	sum := sha256.Sum256([]byte(address))
	suffix := hex.EncodeToString(sum[:])[:10]
	prefix := strings.ReplaceAll(address, ".", "-")
	const maxPrefix = validation.DNS1123LabelMaxLength - 1 - 10
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	prefix = strings.Trim(prefix, "-")
	if prefix == "" {
		return "wi-" + suffix
	}
	return prefix + "-" + suffix
}
