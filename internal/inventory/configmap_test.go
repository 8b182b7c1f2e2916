package inventory

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestParseEntryValid(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       Entry
	}{
		{"10.1.42.1", "username=Administrator", Entry{Key: "10.1.42.1", Host: Host{Address: "10.1.42.1", Username: "Administrator", Port: 22}}},
		{"instance.dns.com", "username=core\nport=2222", Entry{Key: "instance.dns.com", Host: Host{Address: "instance.dns.com", Username: "core", Port: 2222}}},
		{"Host.Example.COM", "username=admin", Entry{Key: "Host.Example.COM", Host: Host{Address: "host.example.com", Username: "admin", Port: 22}}},
		{"host.example.com.", "username=admin", Entry{Key: "host.example.com.", Host: Host{Address: "host.example.com", Username: "admin", Port: 22}}},
		{"127.0.0.5", "\r\n  username = a.b_c-d@corp.example.com \r\n\r\n port = 2205\r\n", Entry{Key: "127.0.0.5", Host: Host{Address: "127.0.0.5", Username: "a.b_c-d@corp.example.com", Port: 2205}}},
		{"winhost", "port=22\nusername=_svc", Entry{Key: "winhost", Host: Host{Address: "winhost", Username: "_svc", Port: 22}}},
		{"h", "username=u\nport=65535", Entry{Key: "h", Host: Host{Address: "h", Username: "u", Port: 65535}}},
		{"10.0.0.9", "username=u\nhostKey= SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s ", Entry{Key: "10.0.0.9", Host: Host{Address: "10.0.0.9", Username: "u", Port: 22, HostKeyFingerprint: "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s"}}},
		{"10.0.0.10", "username=u\ncontainerRuntime= Existing ", Entry{Key: "10.0.0.10", Host: Host{Address: "10.0.0.10", Username: "u", Port: 22, ContainerRuntime: "Existing"}}},
		{"10.0.0.11", "username=u\ncontainerRuntime=managed", Entry{Key: "10.0.0.11", Host: Host{Address: "10.0.0.11", Username: "u", Port: 22, ContainerRuntime: "Managed"}}},
	} {
		got, err := ParseEntry(tc.key, tc.value)
		if err != nil {
			t.Errorf("ParseEntry(%q, %q): %v", tc.key, tc.value, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseEntry(%q, %q) = %+v, want %+v", tc.key, tc.value, got, tc.want)
		}
	}
}

// TestParseEntryInvalid covers the kinds of bad entries an administrator can
// write; each must be rejected with a reason that says what is wrong.
func TestParseEntryInvalid(t *testing.T) {
	for _, tc := range []struct {
		kind, key, value, want string
	}{
		{"empty address", "", "username=a", "empty address"},
		{"bad IPv4", "10.0.0.256", "username=a", "not a valid IPv4"},
		{"short IPv4", "10.0.1", "username=a", "not a valid IPv4"},
		{"IPv4 with leading zero", "10.0.0.01", "username=a", "not a valid IPv4"},
		{"unspecified address", "0.0.0.0", "username=a", "unspecified"},
		{"broadcast address", "255.255.255.255", "username=a", "broadcast"},
		{"multicast address", "224.0.0.1", "username=a", "multicast"},
		{"IPv6", "fe80::1", "username=a", "IPv6"},
		{"bracketed IPv6", "[::1]", "username=a", "IPv6"},
		{"bad DNS name", "my_host.example.com", "username=a", "neither an IPv4 address nor a DNS name"},
		{"DNS name starting with a dash", "-host", "username=a", "neither"},
		{"empty value", "10.0.0.1", "", "no username"},
		{"only blank lines", "10.0.0.1", "\n \n", "no username"},
		{"missing username", "10.0.0.1", "port=22", "no username"},
		{"empty username", "10.0.0.1", "username=", "username is empty"},
		{"username with a space", "10.0.0.1", "username=John Smith", "not allowed"},
		{"username with a quote", "10.0.0.1", `username=a"b`, "not allowed"},
		{"username with a single quote", "10.0.0.1", "username=o'brien", "not allowed"},
		{"username with a backslash", "10.0.0.1", `username=CORP\admin`, "not allowed"},
		{"username with shell characters", "10.0.0.1", "username=a;b&c|d", "not allowed"},
		{"username starting with a dash", "10.0.0.1", "username=-oProxyCommand", "not allowed"},
		{"username too long", "10.0.0.1", "username=" + strings.Repeat("a", 105), "longer than"},
		{"two usernames", "10.0.0.1", "username=a\nusername=b", "given twice"},
		{"two ports", "10.0.0.1", "username=a\nport=22\nport=23", "given twice"},
		{"unknown key", "10.0.0.1", "username=a\npassword=hunter2", "unknown key"},
		{"misspelt key", "10.0.0.1", "user=a", "unknown key"},
		{"host key not a fingerprint", "10.0.0.1", "username=a\nhostKey=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5", "not a SHA256 fingerprint"},
		{"MD5 host key", "10.0.0.1", "username=a\nhostKey=MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48", "not a SHA256 fingerprint"},
		{"host key cut short", "10.0.0.1", "username=a\nhostKey=SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2", "not a SHA256 fingerprint"},
		{"two host keys", "10.0.0.1", "username=a\nhostKey=x\nhostKey=y", "given twice"},
		{"unknown container runtime", "10.0.0.1", "username=a\ncontainerRuntime=docker", `containerRuntime: "docker": want managed or existing`},
		{"two container runtimes", "10.0.0.1", "username=a\ncontainerRuntime=managed\ncontainerRuntime=existing", "given twice"},
		{"line without =", "10.0.0.1", "Administrator", "not key=value"},
		{"port zero", "10.0.0.1", "username=a\nport=0", "not from 1 to 65535"},
		{"port too big", "10.0.0.1", "username=a\nport=65536", "not from 1 to 65535"},
		{"port not a number", "10.0.0.1", "username=a\nport=ssh", "not a number"},
		{"negative port", "10.0.0.1", "username=a\nport=-22", "not a number"},
		{"signed port", "10.0.0.1", "username=a\nport=+22", "not a number"},
	} {
		_, err := ParseEntry(tc.key, tc.value)
		if err == nil {
			t.Errorf("%s: ParseEntry(%q, %q) accepted it", tc.kind, tc.key, tc.value)
			continue
		}
		ee, ok := err.(EntryError)
		if !ok || ee.Key != tc.key {
			t.Errorf("%s: error %#v is not an EntryError for key %q", tc.kind, err, tc.key)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q lacks %q", tc.kind, err, tc.want)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error %q repeats a value that may be a password", tc.kind, err)
		}
	}
}

func TestParseInstancesDuplicatesAndOrder(t *testing.T) {
	entries, errs := ParseInstances(map[string]string{
		"host.example.com":  "username=a",
		"Host.Example.com":  "username=b",
		"host.example.com.": "username=c",
		"10.0.0.2":          "username=d",
		"10.0.0.1":          "username=e\nport=2222",
		"bad_host":          "username=f",
	})
	var keys []string
	for _, e := range entries {
		keys = append(keys, e.Key)
	}
	if got := strings.Join(keys, ","); got != "10.0.0.1,10.0.0.2,host.example.com" {
		t.Errorf("valid entries %s, want 10.0.0.1,10.0.0.2,host.example.com (the canonical spelling of a host wins)", got)
	}
	var bad []string
	for _, e := range errs {
		bad = append(bad, e.Key)
		if e.Key != "bad_host" && !strings.Contains(e.Reason, `same host as entry "host.example.com"`) {
			t.Errorf("duplicate %q: reason %q", e.Key, e.Reason)
		}
	}
	if got := strings.Join(bad, ","); got != "Host.Example.com,bad_host,host.example.com." {
		t.Errorf("rejected %s", got)
	}
}

func TestParseInstancesDuplicatesWithoutCanonicalSpelling(t *testing.T) {
	entries, errs := ParseInstances(map[string]string{"Host.Example.com": "username=a", "HOST.example.com.": "username=b"})
	if len(entries) != 1 || entries[0].Key != "HOST.example.com." || len(errs) != 1 || errs[0].Key != "Host.Example.com" {
		t.Errorf("entries %+v errors %+v; want the first key in order kept", entries, errs)
	}
}

func TestInstanceName(t *testing.T) {
	long := strings.Repeat("a", 60) + ".example.com"
	long2 := strings.Repeat("a", 60) + ".example.org"
	names := map[string]string{}
	for _, addr := range []string{"10.1.42.1", "10.1.4.21", "host.example.com", "host-example.com", long, long2, "h"} {
		n := InstanceName(addr)
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("InstanceName(%q) = %q: %v", addr, n, errs)
		}
		if prev, dup := names[n]; dup {
			t.Errorf("%q and %q both give %q", prev, addr, n)
		}
		names[n] = addr
		if InstanceName(addr) != n {
			t.Errorf("InstanceName(%q) is not deterministic", addr)
		}
	}
	if n := InstanceName("10.1.42.1"); !strings.HasPrefix(n, "10-1-42-1-") {
		t.Errorf("InstanceName(10.1.42.1) = %q, want a readable prefix", n)
	}
}

// FuzzParseEntry: entries are typed by administrators. Whatever they hold,
// an accepted entry is safe to use: a normalized address that normalizes to
// itself, an allowed user name, a port in range, and a valid instance name.
func FuzzParseEntry(f *testing.F) {
	f.Add("10.1.42.1", "username=Administrator")
	f.Add("instance.dns.com", "username=core\nport=2222")
	f.Add("Host.Example.COM.", "\r\nusername = x@y\r\n")
	f.Add("fe80::1", "username=a")
	f.Add("10.0.0.256", "username=a b")
	f.Add("h", "username=a\nusername=b\nport=99999")
	f.Fuzz(func(t *testing.T, key, value string) {
		e, err := ParseEntry(key, value)
		if err != nil {
			if _, ok := err.(EntryError); !ok {
				t.Fatalf("error %#v is not an EntryError", err)
			}
			return
		}
		again, err := NormalizeAddress(e.Address)
		if err != nil || again != e.Address {
			t.Fatalf("address %q does not normalize to itself: %q, %v", e.Address, again, err)
		}
		if !usernameRe.MatchString(e.Username) || strings.ContainsAny(e.Username, " \t\r\n\"'\\`$;&|<>%^") {
			t.Fatalf("unsafe username accepted: %q", e.Username)
		}
		if e.Port < 1 || e.Port > 65535 {
			t.Fatalf("port %d accepted", e.Port)
		}
		if errs := validation.IsDNS1123Label(InstanceName(e.Address)); len(errs) > 0 {
			t.Fatalf("InstanceName(%q) = %q: %v", e.Address, InstanceName(e.Address), errs)
		}
	})
}

// FuzzParseInstances: the whole ConfigMap is typed by administrators too.
// Whatever it holds, ParseInstances does not panic, accounts for every key
// exactly once (an entry or an error, never both, never neither), keeps at
// most one entry per host, and every entry it keeps is one NewHost accepts
// as it stands. The map is fuzzed as one string: records separated by
// "\x1e", key and value by "\x1f" (a fuzzer cannot generate maps).
func FuzzParseInstances(f *testing.F) {
	f.Add("10.1.42.1\x1fusername=Administrator\x1einstance.dns.com\x1fusername=core\nport=2222")
	f.Add("Host.Example.com\x1fusername=a\x1ehost.example.com\x1fusername=b")
	f.Add("a.b\x1fusername=a\x1eA.B.\x1fusername=a\x1ea.B\x1fport=1")
	f.Add("fe80::1\x1fusername=a\x1e10.0.0.1\x1fusername=x\nhostKey=SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		data := map[string]string{}
		for _, rec := range strings.Split(s, "\x1e") {
			k, v, _ := strings.Cut(rec, "\x1f")
			data[k] = v
		}
		entries, errs := ParseInstances(data)
		seen := map[string]string{} // key → "entry" or "error"
		hosts := map[string]bool{}
		for _, e := range entries {
			if _, ok := data[e.Key]; !ok {
				t.Fatalf("entry %q is not a key of the ConfigMap", e.Key)
			}
			if seen[e.Key] != "" {
				t.Fatalf("key %q accounted for twice", e.Key)
			}
			seen[e.Key] = "entry"
			if hosts[e.Address] {
				t.Fatalf("two entries for host %q", e.Address)
			}
			hosts[e.Address] = true
			again, err := NewHost(e.Address, e.Username, strconv.Itoa(int(e.Port)), e.HostKeyFingerprint)
			if err != nil || again.Address != e.Address || again.Username != e.Username || again.Port != e.Port {
				t.Fatalf("entry %+v is not one NewHost accepts as it stands: %+v, %v", e, again, err)
			}
		}
		for _, e := range errs {
			if _, ok := data[e.Key]; !ok {
				t.Fatalf("error for %q, which is not a key of the ConfigMap", e.Key)
			}
			if seen[e.Key] != "" {
				t.Fatalf("key %q accounted for twice (%s and error %q)", e.Key, seen[e.Key], e.Reason)
			}
			seen[e.Key] = "error"
		}
		if len(seen) != len(data) {
			t.Fatalf("%d keys, %d accounted for", len(data), len(seen))
		}
	})
}
