//go:build windows

package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/windows"

	"github.com/winnode/winnode/internal/winpath"
)

// Security reads the owner and DACL with GetNamedSecurityInfo
// (https://learn.microsoft.com/windows/win32/api/aclapi/nf-aclapi-getnamedsecurityinfow)
// and writes the DACL as SDDL
// (ConvertSecurityDescriptorToStringSecurityDescriptor).
func (n *native) Security(_ context.Context, p winpath.Path) (string, string, error) {
	sd, err := windows.GetNamedSecurityInfo(p.String(), windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
		return "", "", fmt.Errorf("%s: %w", p, os.ErrNotExist)
	}
	if err != nil {
		return "", "", fmt.Errorf("reading the security descriptor of %s: %w", p, err)
	}
	owner, _, err := sd.Owner()
	if err != nil || owner == nil {
		return "", "", fmt.Errorf("reading the owner of %s: %v", p, err)
	}
	s := sd.String() // "O:BAD:P(...)": the owner part first, then the DACL
	i := strings.Index(s, "D:")
	if i < 0 {
		return owner.String(), "", nil
	}
	return owner.String(), s[i:], nil
}

// SetSecurity sets the owner and a protected DACL with SetNamedSecurityInfo
// (https://learn.microsoft.com/windows/win32/api/aclapi/nf-aclapi-setnamedsecurityinfow):
// PROTECTED_DACL_SECURITY_INFORMATION stops inheritance from the parent,
// and the function propagates the DACL's inheritable ACEs to the objects
// below. An elevated administrator may make Administrators the owner (the
// group is in its token as an owner), which is what the agent runs as.
func (n *native) SetSecurity(_ context.Context, p winpath.Path, owner, dacl string) error {
	sd, err := windows.SecurityDescriptorFromString("O:" + owner + dacl)
	if err != nil {
		return fmt.Errorf("security descriptor O:%s%s: %w", owner, dacl, err)
	}
	ownerSID, _, err := sd.Owner()
	if err != nil {
		return err
	}
	acl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	err = windows.SetNamedSecurityInfo(p.String(), windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		ownerSID, nil, acl, nil)
	if err != nil {
		return fmt.Errorf("setting the owner and ACL of %s: %w", p, err)
	}
	return nil
}

// RunningAs returns the user SID of the agent's process token
// (GetTokenInformation(TokenUser),
// https://learn.microsoft.com/windows/win32/api/securitybaseapi/nf-securitybaseapi-gettokeninformation).
// An elevated administrator's new files are usually owned by Administrators
// (the token's default owner), but files it made before elevation, or that
// an administrator's SFTP session uploaded, are owned by the account itself.
func (n *native) RunningAs(context.Context) (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("reading the agent's own account: %w", err)
	}
	return u.User.Sid.String(), nil
}
