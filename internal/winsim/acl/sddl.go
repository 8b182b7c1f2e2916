// Package acl is the simulated host's security store: the owner and the
// discretionary ACL (DACL) of each file and folder, in the form Windows
// writes them (SDDL, "Security Descriptor String Format",
// https://learn.microsoft.com/windows/win32/secauthz/security-descriptor-string-format),
// and the access check Windows makes for a user's token. The model is small
// on purpose: allow ACEs only, the rights and inheritance flags winnode's
// checks need (see Right and the flags below), no deny ACEs, no groups
// beyond the well-known ones a local user belongs to.
package acl

import (
	"fmt"
	"strconv"
	"strings"
)

// Well-known SIDs (https://learn.microsoft.com/windows/win32/secauthz/well-known-sids).
const (
	System              = "S-1-5-18"
	Administrators      = "S-1-5-32-544"
	Users               = "S-1-5-32-545"
	AuthenticatedUsers  = "S-1-5-11"
	Everyone            = "S-1-1-0"
	CreatorOwner        = "S-1-3-0"
	TrustedInstaller    = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"
	simulatedUserPrefix = "S-1-5-21-1004336348-1177238915-682003330-" // a simulated machine domain; users get 1001, 1002, ...
)

// aliases are the SDDL SID strings the default descriptors use
// ("SID Strings", https://learn.microsoft.com/windows/win32/secauthz/sid-strings).
var aliases = map[string]string{
	"SY": System, "BA": Administrators, "BU": Users, "AU": AuthenticatedUsers,
	"WD": Everyone, "CO": CreatorOwner,
}

// Right is an access mask (https://learn.microsoft.com/windows/win32/fileio/file-access-rights-constants).
type Right uint32

const (
	ReadData    Right = 0x1      // FILE_READ_DATA / FILE_LIST_DIRECTORY
	AddFile     Right = 0x2      // FILE_WRITE_DATA / FILE_ADD_FILE
	AddFolder   Right = 0x4      // FILE_APPEND_DATA / FILE_ADD_SUBDIRECTORY ("AD" in icacls)
	DeleteChild Right = 0x40     // FILE_DELETE_CHILD
	Delete      Right = 0x10000  // DELETE
	FullAccess  Right = 0x1f01ff // FILE_ALL_ACCESS ("FA", icacls "F")
	WriteData   Right = AddFile
)

// rightNames are the SDDL right strings the model reads besides hex masks.
var rightNames = map[string]Right{"FA": FullAccess, "FR": 0x120089, "FX": 0x1200a0, "FW": 0x120116, "LC": AddFolder}

// ACE flags (SDDL "OI", "CI", "IO"): object inherit, container inherit,
// inherit only.
const (
	ObjectInherit = 1 << iota
	ContainerInherit
	InheritOnly
)

// ACE is one access-allowed entry.
type ACE struct {
	Flags int
	Mask  Right
	SID   string // full form, S-1-...
}

// DACL is a parsed "D:..." string. Protected ("P") stops inheritance from
// the parent.
type DACL struct {
	Protected bool
	ACEs      []ACE
}

// ParseDACL reads the DACL part of an SDDL string ("D:P(A;OICI;FA;;;SY)...").
// Only allow ACEs ("A") are accepted; "AI" and "AR" header flags are read
// and dropped (auto-inheritance bookkeeping, no effect on access).
func ParseDACL(s string) (DACL, error) {
	var d DACL
	rest, ok := strings.CutPrefix(s, "D:")
	if !ok {
		return d, fmt.Errorf("SDDL %q does not start with \"D:\"", s)
	}
	head, body, _ := strings.Cut(rest, "(")
	d.Protected = strings.Contains(head, "P")
	if body == "" {
		return d, nil
	}
	for _, part := range strings.Split(strings.TrimSuffix(body, ")"), ")(") {
		ace, err := parseACE(part)
		if err != nil {
			return d, fmt.Errorf("SDDL %q: %w", s, err)
		}
		d.ACEs = append(d.ACEs, ace)
	}
	return d, nil
}

func parseACE(s string) (ACE, error) {
	f := strings.Split(s, ";")
	if len(f) != 6 || f[0] != "A" {
		return ACE{}, fmt.Errorf("ACE (%s): only allow ACEs (A;flags;rights;;;sid) are simulated", s)
	}
	var a ACE
	if len(f[1])%2 != 0 {
		return ACE{}, fmt.Errorf("ACE (%s): flags %q are not simulated", s, f[1])
	}
	for i := 0; i < len(f[1]); i += 2 {
		switch f[1][i : i+2] {
		case "OI":
			a.Flags |= ObjectInherit
		case "CI":
			a.Flags |= ContainerInherit
		case "IO":
			a.Flags |= InheritOnly
		default:
			return ACE{}, fmt.Errorf("ACE (%s): flag %q is not simulated", s, f[1][i:i+2])
		}
	}
	if m, ok := rightNames[f[2]]; ok {
		a.Mask = m
	} else if n, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(f[2]), "0x"), 16, 32); err == nil && strings.HasPrefix(strings.ToLower(f[2]), "0x") {
		a.Mask = Right(n)
	} else {
		return ACE{}, fmt.Errorf("ACE (%s): rights %q are not simulated", s, f[2])
	}
	a.SID = f[5]
	if full, ok := aliases[strings.ToUpper(a.SID)]; ok {
		a.SID = full
	}
	return a, nil
}

// String writes d back as SDDL, SIDs in full form.
func (d DACL) String() string {
	var b strings.Builder
	b.WriteString("D:")
	if d.Protected {
		b.WriteString("P")
	}
	for _, a := range d.ACEs {
		flags := ""
		if a.Flags&ObjectInherit != 0 {
			flags += "OI"
		}
		if a.Flags&ContainerInherit != 0 {
			flags += "CI"
		}
		if a.Flags&InheritOnly != 0 {
			flags += "IO"
		}
		fmt.Fprintf(&b, "(A;%s;0x%x;;;%s)", flags, uint32(a.Mask), a.SID)
	}
	return b.String()
}
