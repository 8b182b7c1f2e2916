package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// This file is the pure half of the sources step: reading the
// windows-instances ConfigMap. Its format (from the BYOH proposal, seeds/002):
//
//	data:
//	  10.1.42.1: |-
//	    username=Administrator
//	  instance.dns.com: |-
//	    username=core
//	    port=2222
//
// Each key is a host: an IPv4 address or a DNS name. IPv6 is not supported:
// ConfigMap keys cannot contain ':', so the API server refuses such entries
// before the operator sees them (the parser rejects them too). Each value is
// lines of key=value: username (required, once) and port (optional, once,
// 1-65535, default 22). Blank lines and spaces around keys and values are
// ignored; anything else is an error for that entry only.
//
// The format is simple enough that a dedicated parser is clearer than bending
// a general one (an env-file or properties reader would accept duplicates and
// unknown keys silently).

// Entry is one valid entry of the ConfigMap: a host to manage.
type Entry struct {
	// Key is the ConfigMap key as written.
	Key string
	// Address is the normalized address: an IPv4 address, or a DNS name in
	// lower case without a trailing dot.
	Address string
	// Username is the account to log in with.
	Username string
	// Port is the SSH port.
	Port int32
}

// EntryError is why one entry was rejected.
type EntryError struct {
	Key    string
	Reason string
}

func (e EntryError) Error() string { return fmt.Sprintf("entry %q: %s", e.Key, e.Reason) }

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

// ParseEntry parses one entry: key is the host, value the key=value lines.
func ParseEntry(key, value string) (Entry, error) {
	bad := func(format string, args ...any) (Entry, error) {
		return Entry{}, EntryError{Key: key, Reason: fmt.Sprintf(format, args...)}
	}
	addr, err := NormalizeAddress(key)
	if err != nil {
		return bad("%v", err)
	}
	e := Entry{Key: key, Address: addr, Port: 22}
	seen := map[string]bool{}
	for i, line := range strings.Split(value, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return bad("line %d %q is not key=value; write username=<user> and optionally port=<n>", i+1, clip(line))
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if seen[k] {
			return bad("%s is given twice; give it once", clip(k))
		}
		seen[k] = true
		switch k {
		case "username":
			if v == "" {
				return bad("username is empty")
			}
			if len(v) > maxUsernameLen {
				return bad("username is longer than %d characters", maxUsernameLen)
			}
			if !usernameRe.MatchString(v) {
				return bad("username %q has characters that are not allowed; use letters, digits, '.', '_', '-' and '@' (user@domain instead of DOMAIN\\user), not starting with '.', '-' or '@'", clip(v))
			}
			e.Username = v
		case "port":
			if !portRe.MatchString(v) {
				return bad("port %q is not a number from 1 to 65535", clip(v))
			}
			n, _ := strconv.Atoi(v)
			if n < 1 || n > 65535 {
				return bad("port %d is not from 1 to 65535", n)
			}
			e.Port = int32(n)
		default:
			return bad("unknown key %q; only username and port are allowed", clip(k))
		}
	}
	if e.Username == "" {
		return bad("no username; write username=<user>")
	}
	return e, nil
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

// ParseInstances parses every entry of the ConfigMap's data. It returns the
// valid entries and one error per invalid entry, both sorted by key. When
// several keys name the same host (e.g. "Host.Example.com" and
// "host.example.com"), one is kept — the one spelt canonically (as
// NormalizeAddress writes it) if any, else the first in key order — and each
// other one is rejected.
func ParseInstances(data map[string]string) ([]Entry, []EntryError) {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var valid []Entry
	var errs []EntryError
	winner := map[string]string{} // address → key kept
	for _, k := range keys {
		e, err := ParseEntry(k, data[k])
		if err != nil {
			errs = append(errs, err.(EntryError))
			continue
		}
		valid = append(valid, e)
		if w, ok := winner[e.Address]; !ok || (k == e.Address && w != e.Address) {
			winner[e.Address] = k
		}
	}
	var entries []Entry
	for _, e := range valid {
		if w := winner[e.Address]; w != e.Key {
			errs = append(errs, EntryError{Key: e.Key, Reason: fmt.Sprintf("names the same host as entry %q; remove one of them", w)})
			continue
		}
		entries = append(entries, e)
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Key < errs[j].Key })
	return entries, errs
}
