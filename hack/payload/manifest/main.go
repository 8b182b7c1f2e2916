// Command manifest writes the manifest.json of a payload folder with
// internal/payload, so the build script and the operator agree on one format.
//
// Usage:
//
//	go run ./hack/payload/manifest DIR NAME HOSTPATH VERSION [NAME HOSTPATH VERSION ...]
//
// Each NAME is a file already in DIR; its size and sha256 are computed. The
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
	for _, f := range m.Files {
		fmt.Fprintf(os.Stderr, "  %-20s %-28s %-10s %10d  %s\n", f.Name, f.HostPath, f.Version, f.Size, f.SHA256)
	}
	return nil
}
