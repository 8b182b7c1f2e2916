// Command winnodectl is what an administrator types: the demo on simulated
// Windows hosts, adding and removing one host without the operator, the
// status of every Windows host, the user data script, and an SSH session to
// a host. The commands live in internal/cli; this file only runs them.
package main

import (
	"context"
	"os"

	"github.com/winnode/winnode/internal/cli"
)

func main() {
	os.Exit(cli.Execute(context.Background(), os.Args[1:], cli.StdStreams()))
}
