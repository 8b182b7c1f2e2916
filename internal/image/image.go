// Package image writes what a Windows image build must bake in for
// Cluster API's Pull mode (`winnodectl image --output DIR`,
// docs/cluster-api.md): every file of a payload folder at the place it is
// installed on the host, the payload's manifest, which `winnode-agent
// join` checks each file against at boot, and a README that says how to
// use the folder from a Packer (image-builder) Windows build.
//
// The folder mirrors the host's drives: DIR/C is what goes onto C:\
// (C:\k\kubelet.exe is DIR/C/k/kubelet.exe). The simulator's images are
// such folders too: a simulated host boots with DIR/C copied onto its C:\
// (internal/winsim/cloud).
package image

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// ReadmeFile is the README beside the drive folders.
const ReadmeFile = "README.md"

// Write copies the payload in payloadDir (payload.Load checks every file
// against its manifest first) into the image folder dir, which must not
// exist or be empty: each file to dir/<drive>/<path> of its host path, the
// manifest (without the payload's compressed copies, which only travel
// over SSH) to joinconfig.ImageManifestPath there, and README.md. It
// returns the image's manifest.
func Write(payloadDir, dir string) (*payload.Manifest, error) {
	m, err := payload.Load(payloadDir)
	if err != nil {
		return nil, err
	}
	if _, ok := m.Lookup(plan.PayloadAgent); !ok {
		return nil, fmt.Errorf("payload folder %s has no %s: an image without the agent cannot join (rebuild the payload with `make payload`)", payloadDir, plan.PayloadAgent)
	}
	if err := emptyFolder(dir); err != nil {
		return nil, err
	}
	img := &payload.Manifest{SchemaVersion: m.SchemaVersion}
	for _, f := range m.Files {
		dst, err := Local(dir, f.HostPath)
		if err == nil {
			err = copyFile(filepath.Join(payloadDir, f.Name), dst)
		}
		if err != nil {
			return nil, fmt.Errorf("image folder %s: payload file %s (%s): %w", dir, f.Name, f.HostPath, err)
		}
		f.Encoding, f.EncodedSHA256, f.EncodedSize = "", "", 0
		img.Files = append(img.Files, f)
	}
	if err := writeManifest(dir, img); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ReadmeFile), Readme(img), 0o644); err != nil {
		return nil, fmt.Errorf("image folder %s: %w", dir, err)
	}
	return img, nil
}

// Local is where the host path hostPath is in the image folder dir:
// dir/<drive letter>/<parts>.
func Local(dir, hostPath string) (string, error) {
	p, err := winpath.Parse(hostPath)
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{dir, strings.ToUpper(p.Drive[:1])}, p.Parts...)...), nil
}

// emptyFolder creates dir, or accepts it when it is empty: files an older
// image left there would be baked in too.
func emptyFolder(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("image folder %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("image folder %s is not empty: give a new folder, so that nothing of another image is baked in", dir)
	}
	return nil
}

func writeManifest(dir string, m *payload.Manifest) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("image folder %s: %w", dir, err)
	}
	data, err := payload.Encode(m)
	if err == nil {
		var dst string
		if dst, err = Local(dir, joinconfig.ImageManifestPath); err == nil {
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				err = os.WriteFile(dst, data, 0o644)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("image folder %s: the manifest: %w", dir, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// Files are the image's files by host path, sorted, the manifest last.
func Files(m *payload.Manifest) []string {
	var out []string
	for _, f := range m.Files {
		out = append(out, f.HostPath)
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return append(out, joinconfig.ImageManifestPath)
}
