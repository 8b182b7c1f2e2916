//go:build !linux

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// The demo runs Linux programs as simulated Windows hosts and a control
// plane built for Linux: it exists on Linux only.
func newDemoCommand(Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run winnode on this machine with simulated Windows hosts (Linux only)",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("winnodectl demo runs on Linux only: its simulated Windows hosts are Linux processes; run it on a Linux machine or VM")
		},
	}
}
