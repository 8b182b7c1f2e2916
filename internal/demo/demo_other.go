//go:build !linux

package demo

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/cli"
)

// The demo runs Linux programs as simulated Windows hosts and a control
// plane built for Linux: it exists on Linux only.
func NewCommand(cli.Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run winnode on this machine with simulated Windows hosts (Linux only)",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("winnodectl demo runs on Linux only: its simulated Windows hosts are Linux processes; run it on a Linux machine or VM")
		},
	}
}
