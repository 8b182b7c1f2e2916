package plan

import (
	"strings"

	"github.com/winnode/winnode/internal/winpath"
)

// Roots are winnode's folders on a host: the only places where the agent
// deletes what a record it did not just receive names (its state file, see
// internal/agent). They are fixed here, not read from the host, so that a
// file written on the host cannot widen them. Render puts every folder and
// file of its plans under them; a plan applied now adds its own folders (see
// Plan.Roots), since the operator sent it.
var Roots = []string{
	KDir,                     // binaries, configuration, staging (C:\k\.staging)
	KubeletStateDir,          // the kubelet's state and certificates
	KubeletLogDir,            // logs
	KubeProxyLogDir,          //
	FlanneldLogDir,           //
	ContainerdLogDir,         //
	`C:\ProgramData\winnode`, // the agent's own state
}

// Roots returns the folders this plan creates and its staging folder: where
// its files live.
func (p *Plan) Roots() []string {
	out := []string{p.Staging()}
	for _, d := range p.Directories {
		out = append(out, d.Path)
	}
	return out
}

// Within reports whether the Windows path p is one of roots or under one,
// comparing as Windows does (case-insensitively, after resolving `.` and
// `..`, on the same drive). A path that does not parse is within nothing.
func Within(p string, roots []string) bool {
	path, err := winpath.Parse(p)
	if err != nil {
		return false
	}
	for _, r := range roots {
		root, err := winpath.Parse(r)
		if err != nil || !strings.EqualFold(root.Drive, path.Drive) || len(path.Parts) < len(root.Parts) {
			continue
		}
		if len(root.Parts) == 0 {
			continue // a drive root is never winnode's folder
		}
		under := true
		for i, part := range root.Parts {
			if !strings.EqualFold(part, path.Parts[i]) {
				under = false
				break
			}
		}
		if under {
			return true
		}
	}
	return false
}
