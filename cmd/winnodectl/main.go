// Command winnodectl is what an administrator types: the demo on simulated
// Windows hosts, adding and removing one host without the operator, the
// status of every Windows host, the user data script, and an SSH session to
// a host. The commands live in internal/cli and the demo in internal/demo;
// this file wires them and runs them.
package main

import (
	"context"
	"os"

	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/demo"
)

func main() {
	s := cli.StdStreams()
	os.Exit(cli.Execute(context.Background(), os.Args[1:], s, demo.NewCommand(s)))
}
