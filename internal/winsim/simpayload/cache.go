package simpayload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/winnode/winnode/internal/payload"
)

// The compressed-copy cache (Options.Cache). payload.Write compresses
// every file of a new payload folder with zstd, which costs seconds per
// file, and a minute per folder in a test binary built with the race
// detector; tests build many folders of the same few files. Write already
// keeps the compressed copies that the manifest it replaces lists, so the
// cache gives a new folder such a manifest: for each file whose content
// (by sha256) an earlier Build compressed, its entry and a copy of its
// compressed bytes. Write checks each copy's sha256 before it keeps it, so
// a damaged cache entry is compressed again, never shipped.
//
// An entry is two files named by the content's sha256: <sha>.json, the
// manifest entry (sizes, encoding, the copy's sha256), and <sha>.zst, the
// compressed copy when the content compresses. Both are written to a
// temporary name and renamed, the .json last, so that Builds of several
// processes may share one cache. Copies are copied, not hard-linked: a
// test that damages a file of its folder must not damage the cache.

// seedFromCache writes dir's manifest and compressed copies from the cache
// for the files whose content it holds. A folder that has a manifest
// already is left as it is (Write reuses its own copies).
func seedFromCache(dir, cache string, files []payload.File) error {
	if _, err := os.Stat(filepath.Join(dir, payload.ManifestFile)); err == nil {
		return nil
	}
	m := payload.Manifest{SchemaVersion: payload.SchemaVersion}
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(dir, f.Name))
		if err != nil {
			return err
		}
		cached, ok := cachedEntry(cache, sum)
		if !ok {
			continue
		}
		cached.Name, cached.HostPath, cached.Version = f.Name, f.HostPath, f.Version
		if cached.Encoding != "" {
			if err := copyFile(filepath.Join(cache, sum+".zst"), filepath.Join(dir, cached.EncodedName()), nil); err != nil {
				continue // gone meanwhile: Write compresses it
			}
		}
		m.Files = append(m.Files, cached)
	}
	if len(m.Files) == 0 {
		return nil // nothing cached yet: Write compresses every file
	}
	data, err := payload.Encode(&m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, payload.ManifestFile), data, 0o644)
}

// cachedEntry is the cache's manifest entry for the content of sha256 sum.
func cachedEntry(cache, sum string) (payload.File, bool) {
	data, err := os.ReadFile(filepath.Join(cache, sum+".json"))
	if err != nil {
		return payload.File{}, false
	}
	var f payload.File
	if json.Unmarshal(data, &f) != nil || f.SHA256 != sum {
		return payload.File{}, false
	}
	return f, true
}

// storeInCache adds to the cache the entries of dir's manifest it lacks.
func storeInCache(dir, cache string, m *payload.Manifest) error {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	for _, f := range m.Files {
		if _, ok := cachedEntry(cache, f.SHA256); ok {
			continue
		}
		if f.Encoding != "" {
			if err := copyFile(filepath.Join(dir, f.EncodedName()), filepath.Join(cache, f.SHA256+".zst"), nil); err != nil {
				return err
			}
		}
		data, err := json.Marshal(payload.File{SHA256: f.SHA256, Size: f.Size, Encoding: f.Encoding, EncodedSHA256: f.EncodedSHA256, EncodedSize: f.EncodedSize})
		if err != nil {
			return err
		}
		tmp := filepath.Join(cache, f.SHA256+".json.tmp"+fmt.Sprint(os.Getpid()))
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(cache, f.SHA256+".json")); err != nil {
			return errors.Join(err, os.Remove(tmp))
		}
	}
	return nil
}

// fileSHA256 is the hex sha256 of a file's content.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
