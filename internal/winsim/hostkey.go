package winsim

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"
)

// loadHostKey reads the host key from C:\ProgramData\ssh (where Windows
// OpenSSH keeps it), creating it on first boot.
func (h *Host) loadHostKey() error {
	file, err := h.Path(HostKeyPath)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return h.newHostKey()
	}
	if err != nil {
		return fmt.Errorf("simulated host %s: reading host key: %w", h.id.Hostname, err)
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err != nil {
		return fmt.Errorf("simulated host %s: host key %s is damaged (%v); delete it to get a new one", h.id.Hostname, HostKeyPath, err)
	}
	h.mu.Lock()
	h.signer = signer
	h.mu.Unlock()
	return nil
}

// newHostKey makes and saves a fresh ed25519 host key (and its .pub file).
func (h *Host) newHostKey() error {
	file, err := h.Path(HostKeyPath)
	if err != nil {
		return err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	block, err := ssh.MarshalPrivateKey(priv, "simulated host "+h.id.Hostname)
	if err != nil {
		return err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(file, pem.EncodeToMemory(block), 0o600); err != nil {
		return fmt.Errorf("simulated host %s: saving host key: %w", h.id.Hostname, err)
	}
	if err := writeFileAtomic(file+".pub", ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o644); err != nil {
		return err
	}
	h.mu.Lock()
	h.signer = signer
	h.mu.Unlock()
	return nil
}

// HostKey is the host's current public host key.
func (h *Host) HostKey() ssh.PublicKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.signer.PublicKey()
}

// Fingerprint is the host key's "SHA256:..." fingerprint, as ssh-keygen -l
// prints it.
func (h *Host) Fingerprint() string { return ssh.FingerprintSHA256(h.HostKey()) }

func writeFileAtomic(file string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// copyIfChanged copies src to dst unless dst already has the same size and
// modification time (the copy keeps src's time).
func copyIfChanged(src, dst string) error {
	si, err := os.Stat(src)
	if err != nil {
		return err
	}
	if di, err := os.Stat(dst); err == nil && di.Size() == si.Size() && di.ModTime().Equal(si.ModTime()) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chtimes(tmp.Name(), si.ModTime(), si.ModTime()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
