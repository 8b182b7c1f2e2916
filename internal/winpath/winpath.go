// Package winpath is the one place where Windows host paths are parsed and
// converted: the operator speaks `C:\k\kubelet.exe`, Windows OpenSSH's SFTP
// server wants `/C:/k/kubelet.exe`, and the simulator maps `C:\` onto a Linux
// folder with case-insensitive names.
//
// It is written here rather than taken from path/filepath because filepath
// follows the rules of the machine it runs on (Linux), never Windows'.
package winpath

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Path is an absolute Windows path split into its drive letter (upper case)
// and its components, with "." removed and ".." resolved.
type Path struct {
	Drive string   // "C"
	Parts []string // {"k", "kubelet.exe"}
}

// Parse accepts `C:\k\x`, `C:/k/x`, `/C:/k/x` and `c:\k\..\k\x`. Relative
// paths, UNC paths, other drive forms and NUL bytes are rejected: a host path
// in a plan or an SFTP request is always absolute.
func Parse(p string) (Path, error) {
	if strings.ContainsRune(p, 0) {
		return Path{}, fmt.Errorf("windows path %q: contains a NUL byte", p)
	}
	s := strings.ReplaceAll(p, `\`, "/")
	if strings.HasPrefix(s, "/") && len(s) >= 3 && s[2] == ':' {
		s = s[1:] // SFTP form /C:/...
	}
	if len(s) < 2 || s[1] != ':' || !isLetter(s[0]) {
		return Path{}, fmt.Errorf("windows path %q: not an absolute path with a drive letter (want C:\\...)", p)
	}
	if len(s) > 2 && s[2] != '/' {
		return Path{}, fmt.Errorf("windows path %q: drive-relative paths are not supported", p)
	}
	out := Path{Drive: strings.ToUpper(s[:1])}
	for _, part := range strings.Split(s[2:], "/") {
		switch part {
		case "", ".":
		case "..":
			if len(out.Parts) > 0 {
				out.Parts = out.Parts[:len(out.Parts)-1]
			}
		default:
			if strings.ContainsAny(part, `<>:"|?*`) {
				return Path{}, fmt.Errorf("windows path %q: component %q has a character Windows forbids in names", p, part)
			}
			out.Parts = append(out.Parts, part)
		}
	}
	return out, nil
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// String is the Windows form: `C:\k\kubelet.exe`.
func (p Path) String() string {
	return p.Drive + `:\` + strings.Join(p.Parts, `\`)
}

// SFTP is the form Windows OpenSSH's SFTP server uses: `/C:/k/kubelet.exe`.
func (p Path) SFTP() string {
	return "/" + p.Drive + ":/" + strings.Join(p.Parts, "/")
}

// Join appends components (each may itself contain separators).
func (p Path) Join(elem ...string) Path {
	out := Path{Drive: p.Drive, Parts: append([]string(nil), p.Parts...)}
	for _, e := range elem {
		for _, part := range strings.FieldsFunc(e, func(r rune) bool { return r == '/' || r == '\\' }) {
			switch part {
			case ".":
			case "..":
				if len(out.Parts) > 0 {
					out.Parts = out.Parts[:len(out.Parts)-1]
				}
			default:
				out.Parts = append(out.Parts, part)
			}
		}
	}
	return out
}

// Dir is the parent folder; the parent of `C:\` is itself.
func (p Path) Dir() Path {
	if len(p.Parts) == 0 {
		return p
	}
	return Path{Drive: p.Drive, Parts: p.Parts[:len(p.Parts)-1]}
}

// Base is the last component, or "" for a drive root.
func (p Path) Base() string {
	if len(p.Parts) == 0 {
		return ""
	}
	return p.Parts[len(p.Parts)-1]
}

// Equal compares as Windows does: drive and names case-insensitively.
func (p Path) Equal(q Path) bool {
	return strings.EqualFold(p.String(), q.String())
}

// Resolve maps a Windows path onto a Linux folder that stands for drive C:
// (the simulator's host filesystem). Each component is matched
// case-insensitively against what already exists, so `C:\K\Kubelet.EXE` finds
// `<root>/k/kubelet.exe`; components that do not exist yet keep the case given.
// The result never leaves root.
func Resolve(root string, p Path) (string, error) {
	if p.Drive != "C" {
		return "", fmt.Errorf("windows path %s: drive %s: does not exist on this host", p, p.Drive)
	}
	cur := root
	for i, part := range p.Parts {
		next := filepath.Join(cur, part)
		if _, err := os.Lstat(next); err != nil {
			entries, rerr := os.ReadDir(cur)
			if rerr == nil {
				for _, e := range entries {
					if strings.EqualFold(e.Name(), part) {
						next = filepath.Join(cur, e.Name())
						break
					}
				}
			}
		}
		if i < len(p.Parts)-1 {
			if fi, err := os.Lstat(next); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				return "", fmt.Errorf("windows path %s: %s is a link, which the simulated filesystem does not follow", p, part)
			}
		}
		cur = next
	}
	return cur, nil
}

// ResolveString parses and resolves in one call.
func ResolveString(root, p string) (string, error) {
	parsed, err := Parse(p)
	if err != nil {
		return "", err
	}
	return Resolve(root, parsed)
}
