// Command manifest writes the manifest.json of a payload folder with
// internal/payload, so the build script and the operator agree on one format.
//
// Usage:
//
//	go run ./hack/payload/manifest DIR NAME HOSTPATH VERSION [NAME HOSTPATH VERSION ...]
//
// Each NAME is a file already in DIR; its size and sha256 are computed, and
// it is compressed into NAME.zst when that makes it smaller (once: a file the
// manifest already lists with the same content is not compressed again). The
// manifest is then loaded back with payload.Load, exactly as the operator
// reads it, and the command fails if that does not succeed.
package main

import (
	"fmt"
	"os"

	"github.com/winnode/winnode/internal/payload"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "manifest:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 4 || (len(args)-1)%3 != 0 {
		return fmt.Errorf("usage: manifest DIR NAME HOSTPATH VERSION [NAME HOSTPATH VERSION ...]")
	}
	dir := args[0]
	var files []payload.File
	for rest := args[1:]; len(rest) > 0; rest = rest[3:] {
		files = append(files, payload.File{Name: rest[0], HostPath: rest[1], Version: rest[2]})
	}
	if err := payload.Write(dir, files); err != nil {
		return err
	}
	m, err := payload.Load(dir)
	if err != nil {
		return fmt.Errorf("the manifest just written does not load: %w", err)
	}
	var size, encoded int64
	for _, f := range m.Files {
		sent := f.Size
		if f.Encoding != "" {
			sent = f.EncodedSize
		}
		size += f.Size
		encoded += sent
		fmt.Fprintf(os.Stderr, "  %-20s %-28s %-10s %10d  %s  %s %10d (%.3f)\n", f.Name, f.HostPath, f.Version, f.Size, f.SHA256, orNone(f.Encoding), sent, float64(sent)/float64(max(f.Size, 1)))
	}
	fmt.Fprintf(os.Stderr, "  %d bytes, %d compressed (%.3f)\n", size, encoded, float64(encoded)/float64(max(size, 1)))
	return nil
}

func orNone(encoding string) string {
	if encoding == "" {
		return "none"
	}
	return encoding
}
