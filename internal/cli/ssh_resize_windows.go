package cli

import "golang.org/x/crypto/ssh"

// followWindowSize does nothing on Windows, which has no SIGWINCH: the
// session keeps the size it started with.
func followWindowSize(int, *ssh.Session) (stop func()) { return func() {} }
