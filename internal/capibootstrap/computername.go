package capibootstrap

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
)

// Windows computer names (the NetBIOS name, which Rename-Computer sets
// together with the DNS host name) are at most 15 characters: Windows keeps
// only the first 15 of a longer name, so long Cluster API Machine names
// (<deployment>-<random>-<random>) that share a prefix would all become the
// same computer. Microsoft's naming conventions for computers
// (learn.microsoft.com/troubleshoot/windows-server/active-directory/naming-conventions-for-computer-domain-site-ou)
// also refuse names made of digits only, and DNS host names allow letters,
// digits and hyphens only, not at either end.
const (
	// MaxComputerName is NetBIOS's limit.
	MaxComputerName = 15
	// hashLen characters of base32 (5 bits each: 30 bits) end every name.
	hashLen = 6
	// MaxComputerNamePrefix leaves room for "-" and the hash.
	MaxComputerNamePrefix = MaxComputerName - 1 - hashLen
	// maxAttempts bounds the search for a free name (see ComputerName).
	maxAttempts = 10
)

// lowerBase32 is RFC 4648 base32 in lower case (a-z, 2-7), without padding:
// letters and digits only, all valid in a computer name.
var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ComputerName derives the Windows computer name of the Machine namespace/name:
//
//  1. the readable part is prefix when set, otherwise the Machine's name in
//     lower case with every character other than a-z and 0-9 turned into a
//     hyphen and runs of hyphens made one; it is cut to
//     MaxComputerNamePrefix (8) characters, and hyphens at its ends are
//     dropped ("win" if nothing is left);
//  2. the hash is the first 6 characters of the lower-case base32 SHA-256
//     of "namespace/name" (attempt 0) or "namespace/name#attempt";
//  3. the name is readable + "-" + hash: 15 characters at most, letters,
//     digits and hyphens, never digits only, never a hyphen at either end.
//
// The same Machine always gets the same name for the same attempt. Two
// Machines, even in different namespaces or with names that share their first
// characters, get names that differ in the hash (30 bits); the controller
// still checks the names already given (attempt 1, 2... on a clash), since
// a hash cannot promise that.
func ComputerName(namespace, machine, prefix string, attempt int) string {
	readable := prefix
	if readable == "" {
		readable = sanitize(machine)
	}
	readable = strings.ToLower(readable)
	if len(readable) > MaxComputerNamePrefix {
		readable = readable[:MaxComputerNamePrefix]
	}
	readable = strings.Trim(readable, "-")
	if readable == "" {
		readable = "win"
	}
	input := namespace + "/" + machine
	if attempt > 0 {
		input += fmt.Sprintf("#%d", attempt)
	}
	sum := sha256.Sum256([]byte(input))
	return readable + "-" + lowerBase32.EncodeToString(sum[:])[:hashLen]
}

// sanitize maps s to a-z, 0-9 and single hyphens.
func sanitize(s string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			hyphen = false
			continue
		}
		if !hyphen {
			b.WriteByte('-')
			hyphen = true
		}
	}
	return b.String()
}

// CheckComputerName reports whether name is a computer name the bootstrap
// data may set: 1-15 letters, digits and hyphens, not starting or ending
// with a hyphen, not digits only. The rendering refuses anything else, since
// the name is embedded in the PowerShell script.
func CheckComputerName(name string) error {
	if err := checkNameChars(name, MaxComputerName); err != nil {
		return fmt.Errorf("computer name %q: %w", name, err)
	}
	if strings.Trim(name, "0123456789") == "" {
		return fmt.Errorf("computer name %q: must not be digits only", name)
	}
	return nil
}

// checkNameChars holds the rules a computer name and a prefix share:
// 1 to maxLen ASCII letters, digits and hyphens, no hyphen at either end.
func checkNameChars(s string, maxLen int) error {
	if s == "" || len(s) > maxLen {
		return fmt.Errorf("must be 1 to %d characters, is %d", maxLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("character %q at position %d is not a letter, digit or hyphen", c, i+1)
		}
	}
	if s[0] == '-' || s[len(s)-1] == '-' {
		return fmt.Errorf("must not start or end with a hyphen")
	}
	return nil
}
