package inventory

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// winnodectl add checks its flags with NewHost; before NewHost existed it
// wrote them as an entry's value and parsed that. Both must accept the same
// hosts and say the same thing about the others.
func TestNewHostIsParseEntryOfFlags(t *testing.T) {
	for _, tc := range []struct {
		address, user string
		port          int
	}{
		{"10.1.42.1", "Administrator", 22},
		{"Host.Example.COM.", "core", 2222},
		{"10.0.0.1", " admin ", 22},
		{"10.0.0.1", "", 22},
		{"10.0.0.1", "John Smith", 22},
		{"10.0.0.1", `CORP\admin`, 22},
		{"10.0.0.1", "a=b", 22},
		{"10.0.0.1", strings.Repeat("a", 105), 22},
		{"10.0.0.1", "admin", 0},
		{"10.0.0.1", "admin", -5},
		{"10.0.0.1", "admin", 65536},
		{"10.0.0.1", "admin", 123456},
		{"10.0.0.256", "admin", 22},
		{"fe80::1", "admin", 22},
		{"", "admin", 22},
	} {
		h, err := NewHost(tc.address, tc.user, strconv.Itoa(tc.port), "")
		e, perr := ParseEntry(tc.address, fmt.Sprintf("username=%s\nport=%d", tc.user, tc.port))
		if fmt.Sprint(err) != fmt.Sprint(perr) {
			t.Errorf("%q %q %d: NewHost says %v, ParseEntry %v", tc.address, tc.user, tc.port, err, perr)
		}
		if err == nil && h != e.Host {
			t.Errorf("%q %q %d: NewHost gives %+v, ParseEntry %+v", tc.address, tc.user, tc.port, h, e.Host)
		}
		if err != nil {
			if ee, ok := err.(EntryError); !ok || ee.Key != tc.address {
				t.Errorf("%q %q %d: error %#v is not an EntryError for the address", tc.address, tc.user, tc.port, err)
			}
		}
	}
}

func TestNewHostNormalizes(t *testing.T) {
	h, err := NewHost("Win-01.Example.com.", " winadmin ", "2222", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Host{Address: "win-01.example.com", Username: "winadmin", Port: 2222}); h != want {
		t.Errorf("NewHost = %+v, want %+v", h, want)
	}
}
