package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// Securing winnode's folders (issue 11, "What runs as Administrator").
//
// Windows' default ACL of C:\ lets Authenticated Users create folders there
// and modify everything below what they create; what an administrator
// creates at C:\ inherits "Authenticated Users: Modify" too. C:\ProgramData
// lets Users create files and folders. So a local user who is not an
// administrator could pre-create C:\k, or write in it, and plant a DLL next
// to kubelet.exe (run as SYSTEM), or read the kubelet's credentials. Before
// apply or remove writes anything (before the lock file and the state file
// are touched), secureFolders therefore:
//
//  1. checks the owner of each existing root, of each existing folder above
//     it (below the drive), and of each file directly in it: only SYSTEM,
//     Administrators, TrustedInstaller and the administrator the agent runs
//     as are trusted, since an owner can always change the ACL. Anything else stops the command with
//     UntrustedFolder, naming the path. A blob in the staging folder is
//     deleted instead: it is uploaded again, and its SHA-256 is checked
//     before use anyway;
//  2. gives each root (created if missing) owner Administrators and a
//     protected DACL of SYSTEM and Administrators only (credentials
//     included), and each folder above it that is not Windows' own (C:\var,
//     C:\var\lib) the same plus Users: read & execute;
//  3. checks the owners again: a file planted between 1 and 2 is caught.
//
// Nothing is written when the owner and DACL are already right.

const (
	sidSystem           = "S-1-5-18"
	sidAdministrators   = "S-1-5-32-544"
	sidTrustedInstaller = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"

	// rootDACL: SYSTEM and Administrators, full control, inherited by
	// everything below (OICI); P: nothing inherited from above.
	rootDACL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
	// ancestorDACL adds Users: read & execute (0x1200a9), so that a user
	// may still list C:\var.
	ancestorDACL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"
)

// trustedOwners are the well-known owners of what only administrators may
// write; secureFolders adds the account the agent runs as.
var trustedOwners = []string{sidSystem, sidAdministrators, sidTrustedInstaller}

// windowsFolders are Windows' own folders: their ACLs are left as they are.
var windowsFolders = []string{`C:\ProgramData`, `C:\Program Files`, `C:\Windows`}

// secureFolders checks and secures roots; untrusted files directly in
// staging are deleted rather than refused.
func (a *Agent) secureFolders(ctx context.Context, roots []string, staging string) error {
	paths, err := parseRoots(roots)
	if err != nil {
		return err
	}
	self, err := a.Platform.RunningAs(ctx)
	if err != nil {
		return plan.AsError(err, plan.ErrHost)
	}
	trusted := append(slices.Clone(trustedOwners), self)
	if err := a.checkOwners(ctx, paths, staging, trusted); err != nil {
		return err
	}
	for _, p := range paths {
		if plan.Within(p.String(), otherRoots(p, paths)) {
			continue // below another root: it inherits that root's DACL
		}
		if err := a.secureRoot(ctx, p); err != nil {
			return err
		}
	}
	if err := a.checkOwners(ctx, paths, staging, trusted); err != nil {
		return err
	}
	if slices.ContainsFunc(paths, func(p winpath.Path) bool { return strings.EqualFold(p.String(), plan.AgentLogDir) }) {
		a.startOwnLog(ctx, true)
	}
	return nil
}

func parseRoots(roots []string) ([]winpath.Path, error) {
	var out []winpath.Path
	seen := map[string]bool{}
	for _, r := range roots {
		p, err := winpath.Parse(r)
		if err != nil || len(p.Parts) == 0 {
			return nil, plan.Errorf(plan.ErrPlanInvalid, "folder %q: not a folder below a drive root", r)
		}
		if k := strings.ToLower(p.String()); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func otherRoots(p winpath.Path, all []winpath.Path) []string {
	var out []string
	for _, q := range all {
		if !strings.EqualFold(q.String(), p.String()) {
			out = append(out, q.String())
		}
	}
	return out
}

// checkOwners checks, for each root, the folders above it, the root and
// what is directly in it.
func (a *Agent) checkOwners(ctx context.Context, roots []winpath.Path, staging string, trusted []string) error {
	for _, root := range roots {
		for i := 1; i < len(root.Parts); i++ {
			if err := a.checkOwner(ctx, winpath.Path{Drive: root.Drive, Parts: root.Parts[:i]}, trusted); err != nil {
				return err
			}
		}
		if err := a.checkOwner(ctx, root, trusted); err != nil {
			return err
		}
		local, err := a.Platform.LocalPath(root)
		if err != nil {
			return plan.AsError(err, plan.ErrHost)
		}
		entries, err := os.ReadDir(local)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return plan.AsError(err, plan.ErrHost)
		}
		isStaging := strings.EqualFold(root.String(), staging)
		for _, e := range entries {
			child := root.Join(e.Name())
			err := a.checkOwner(ctx, child, trusted)
			var perr *plan.Error
			if isStaging && errors.As(err, &perr) && perr.Code == plan.ErrUntrustedFolder {
				// A staged blob is uploaded again; delete what someone
				// else wrote there.
				if err := os.RemoveAll(local + string(os.PathSeparator) + e.Name()); err != nil {
					return plan.AsError(err, plan.ErrHost)
				}
				continue
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// checkOwner fails with UntrustedFolder if p exists and its owner is not
// in trusted.
func (a *Agent) checkOwner(ctx context.Context, p winpath.Path, trusted []string) error {
	owner, _, err := a.Platform.Security(ctx, p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return plan.AsError(err, plan.ErrHost)
	}
	for _, t := range trusted {
		if strings.EqualFold(owner, t) {
			return nil
		}
	}
	return &plan.Error{Code: plan.ErrUntrustedFolder, File: p.String(), Message: fmt.Sprintf(
		"owned by %s, not by SYSTEM, Administrators, TrustedInstaller or the account the agent runs as: a user who is not an administrator created it "+
			"and may have planted files in it. Inspect it, then delete it (winnode creates it again, writable by administrators only) and retry", owner)}
}

// secureRoot creates root if missing and gives it, and the folders above
// it that are not Windows' own, owner Administrators and their DACL.
func (a *Agent) secureRoot(ctx context.Context, root winpath.Path) error {
	local, err := a.Platform.LocalPath(root)
	if err != nil {
		return plan.AsError(err, plan.ErrHost)
	}
	if err := os.MkdirAll(local, 0o755); err != nil {
		return plan.AsError(fmt.Errorf("creating %s: %w", root, err), plan.ErrHost)
	}
	for i := 1; i < len(root.Parts); i++ {
		anc := winpath.Path{Drive: root.Drive, Parts: root.Parts[:i]}
		if isWindowsFolder(anc) {
			continue
		}
		if err := a.ensureSecurity(ctx, anc, ancestorDACL); err != nil {
			return err
		}
	}
	return a.ensureSecurity(ctx, root, rootDACL)
}

func isWindowsFolder(p winpath.Path) bool {
	for _, w := range windowsFolders {
		if strings.EqualFold(p.String(), w) {
			return true
		}
	}
	return false
}

// ensureSecurity sets owner Administrators and dacl on p unless already so.
func (a *Agent) ensureSecurity(ctx context.Context, p winpath.Path, dacl string) error {
	owner, got, err := a.Platform.Security(ctx, p)
	if err != nil {
		return plan.AsError(err, plan.ErrHost)
	}
	if strings.EqualFold(owner, sidAdministrators) && sameDACL(got, dacl) {
		return nil
	}
	if err := a.Platform.SetSecurity(ctx, p, sidAdministrators, dacl); err != nil {
		return plan.AsError(fmt.Errorf("securing %s: %w", p, err), plan.ErrHost)
	}
	return nil
}

// sameDACL compares two SDDL DACLs, ignoring the "AI" (auto-inherited)
// header flag, which Windows adds as bookkeeping when it propagates.
func sameDACL(a, b string) bool {
	norm := func(s string) string {
		head, rest, _ := strings.Cut(s, "(")
		return strings.ToUpper(strings.ReplaceAll(head, "AI", "")) + "(" + rest
	}
	return norm(a) == norm(b)
}
