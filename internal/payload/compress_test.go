package payload

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/blob"
)

// compressible is content zstd shrinks a lot, as it does Go programs.
var compressible = strings.Repeat("MZ kubelet: the same text again and again; ", 4096)

// compressFixture is a payload folder with a compressible file and one
// that does not compress (random bytes).
func compressFixture(t *testing.T) (string, []File) {
	t.Helper()
	random := make([]byte, 64<<10)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{"kubelet.exe": compressible, "padding.bin": string(random)})
	return dir, []File{
		{Name: "kubelet.exe", HostPath: `C:\k\kubelet.exe`, Version: "v1.37.1"},
		{Name: "padding.bin", HostPath: `C:\k\padding.bin`, Version: "v1"},
	}
}

func TestWriteCompressesWhatShrinks(t *testing.T) {
	dir, files := compressFixture(t)
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := m.Lookup("kubelet.exe")
	if k.Encoding != blob.Zstd || k.EncodedName() != "kubelet.exe.zst" || k.EncodedSize <= 0 || k.EncodedSize*10 > k.Size {
		t.Fatalf("kubelet.exe entry = %+v: want a zstd copy under a tenth of its size", k)
	}
	f, err := os.Open(filepath.Join(dir, "kubelet.exe.zst"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if err := blob.Decode(&out, f, k.Encoding, k.Size, k.SHA256); err != nil || out.String() != compressible {
		t.Fatalf("the copy does not decode to the file: %v", err)
	}
	p, _ := m.Lookup("padding.bin")
	if p.Encoding != "" || p.EncodedSHA256 != "" || p.EncodedSize != 0 || p.EncodedName() != "" {
		t.Fatalf("random bytes got a compressed copy: %+v", p)
	}
	if _, err := os.Stat(filepath.Join(dir, "padding.bin.zst")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a copy that is not smaller was kept: %v", err)
	}
}

// A payload is compressed once: writing the manifest again with the same
// files keeps the copy (the same file, not a new one renamed over it).
func TestWriteCompressesOnce(t *testing.T) {
	dir, files := compressFixture(t)
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	zst := filepath.Join(dir, "kubelet.exe.zst")
	before, err := os.Stat(zst)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(zst)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("the second Write compressed kubelet.exe again")
	}
	if second, _ := os.ReadFile(filepath.Join(dir, ManifestFile)); !bytes.Equal(first, second) {
		t.Fatalf("the manifest changed:\n%s\n%s", first, second)
	}

	// A changed file is compressed again; a damaged copy is made again.
	if err := os.WriteFile(filepath.Join(dir, "kubelet.exe"), []byte(compressible+"v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.Stat(zst); os.SameFile(after, now) {
		t.Fatal("a changed file's copy was kept")
	}
	if err := os.WriteFile(zst, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("a damaged copy was not made again: %v", err)
	}
}

// Files of the same content (the simulated payload's stand-in under
// several names) are compressed once: they share one encoding, whose copy
// is one file under each name, which Load checks.
func TestWriteEncodesTheSameContentOnce(t *testing.T) {
	dir := writeFiles(t, map[string]string{"kubelet.exe": compressible, "kube-proxy.exe": compressible})
	files := []File{
		{Name: "kubelet.exe", HostPath: `C:\k\kubelet.exe`, Version: "v1"},
		{Name: "kube-proxy.exe", HostPath: `C:\k\kube-proxy.exe`, Version: "v1"},
	}
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatalf("Load checks every copy: %v", err)
	}
	k, _ := m.Lookup("kubelet.exe")
	p, _ := m.Lookup("kube-proxy.exe")
	if k.Encoding != blob.Zstd || p.Encoding != k.Encoding || p.EncodedSHA256 != k.EncodedSHA256 || p.EncodedSize != k.EncodedSize {
		t.Fatalf("entries %+v and %+v: want the same encoding", k, p)
	}
	a, errA := os.Stat(filepath.Join(dir, "kubelet.exe.zst"))
	b, errB := os.Stat(filepath.Join(dir, "kube-proxy.exe.zst"))
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Fatalf("kubelet.exe and kube-proxy.exe were compressed separately (%v, %v): want one copy under both names", errA, errB)
	}
}

// Copies no entry has any more are deleted.
func TestWriteRemovesStaleCopies(t *testing.T) {
	dir, files := compressFixture(t)
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, files[1:]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kubelet.exe.zst")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the copy of a file no longer in the payload is still there: %v", err)
	}
}

func TestLoadNamesABadCopy(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"missing":   os.Remove,
		"truncated": func(p string) error { return os.Truncate(p, 10) },
		"corrupted": func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0xff
			return os.WriteFile(p, b, 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, files := compressFixture(t)
			if err := Write(dir, files); err != nil {
				t.Fatal(err)
			}
			if err := damage(filepath.Join(dir, "kubelet.exe.zst")); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			var fe *FileError
			if !errors.As(err, &fe) || fe.Name != "kubelet.exe.zst" {
				t.Fatalf("Load = %v, want a FileError naming kubelet.exe.zst", err)
			}
		})
	}
}

// A v1 manifest (written before compressed copies) still loads; writing
// over it compresses every file.
func TestV1ManifestStillLoads(t *testing.T) {
	dir, files := compressFixture(t)
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	v1 := `{"schemaVersion":"v1","files":[`
	for i, f := range m.Files {
		if i > 0 {
			v1 += ","
		}
		v1 += `{"name":"` + f.Name + `","hostPath":"C:\\k\\` + f.Name + `","sha256":"` + f.SHA256 + `","size":` + strconv.FormatInt(f.Size, 10) + `,"version":"v1"}`
	}
	v1 += "]}"
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := Load(dir)
	if err != nil {
		t.Fatalf("a v1 manifest does not load: %v", err)
	}
	for _, f := range old.Files {
		if f.Encoding != "" {
			t.Fatalf("a v1 entry has an encoding: %+v", f)
		}
	}
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	again, _ := Load(dir)
	if k, _ := again.Lookup("kubelet.exe"); k.Encoding != blob.Zstd {
		t.Fatalf("writing over a v1 manifest did not compress kubelet.exe: %+v", k)
	}
}
