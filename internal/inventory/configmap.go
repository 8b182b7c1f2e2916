package inventory

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
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
//	    hostKey=SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s
//	    containerRuntime=existing
//
// Each key is a host: an IPv4 address or a DNS name. IPv6 is not supported:
// ConfigMap keys cannot contain ':', so the API server refuses such entries
// before the operator sees them (the parser rejects them too). Each value is
// lines of key=value: username (required, once), port (optional, once,
// 1-65535, default 22) and hostKey (optional, once: the SHA256 fingerprint
// the host key must have from the first connection on) and containerRuntime
// (optional, once: managed or existing, the instance's
// spec.containerRuntime; without it the operator's --container-runtime).
// Blank lines and spaces around keys and values are
// ignored; anything else is an error for that entry only.
//
// The format is simple enough that a dedicated parser is clearer than bending
// a general one (an env-file or properties reader would accept duplicates and
// unknown keys silently).

// InstancesConfigMap is the ConfigMap, in the operator namespace, that lists
// bring-your-own hosts in the format above.
const InstancesConfigMap = "windows-instances"

// Entry is one valid entry of the ConfigMap: a host to manage.
type Entry struct {
	// Key is the ConfigMap key as written.
	Key string
	Host
}

// EntryError is why one entry (or one host given to winnodectl) was
// rejected. Key is the host as written.
type EntryError struct {
	Key    string
	Reason string
}

func (e EntryError) Error() string { return fmt.Sprintf("entry %q: %s", e.Key, e.Reason) }

// ParseEntry parses one entry: key is the host, value the key=value lines.
// The lines are read here; what they say is checked by NewHost, as
// winnodectl's flags are.
func ParseEntry(key, value string) (Entry, error) {
	bad := func(format string, args ...any) (Entry, error) {
		return Entry{}, EntryError{Key: key, Reason: fmt.Sprintf(format, args...)}
	}
	if _, err := NormalizeAddress(key); err != nil {
		return bad("%v", err) // the key names the entry: checked first
	}
	fields := map[string]string{}
	for i, line := range strings.Split(value, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return bad("line %d %q is not key=value; write username=<user> and optionally port=<n>, hostKey=SHA256:... and containerRuntime=managed|existing", i+1, clip(line))
		}
		k = strings.TrimSpace(k)
		if _, seen := fields[k]; seen {
			return bad("%s is given twice; give it once", clip(k))
		}
		if k != "username" && k != "port" && k != "hostKey" && k != "containerRuntime" {
			return bad("unknown key %q; only username, port, hostKey and containerRuntime are allowed", clip(k))
		}
		fields[k] = v
	}
	username, ok := fields["username"]
	if !ok {
		return bad("no username; write username=<user>")
	}
	port, ok := fields["port"]
	if !ok {
		port = strconv.Itoa(DefaultPort)
	}
	h, err := NewHost(key, username, port, fields["hostKey"])
	if err != nil {
		return Entry{}, err
	}
	if v, ok := fields["containerRuntime"]; ok {
		if h.ContainerRuntime, err = ParseContainerRuntime(strings.TrimSpace(v)); err != nil {
			return bad("containerRuntime: %v", err)
		}
	}
	return Entry{Key: key, Host: h}, nil
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
