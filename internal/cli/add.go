package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newAddCommand(s Streams) *cobra.Command {
	return &cobra.Command{Use: "add", RunE: func(*cobra.Command, []string) error { return errors.New("not yet") }}
}
func newRemoveCommand(s Streams) *cobra.Command {
	return &cobra.Command{Use: "remove", RunE: func(*cobra.Command, []string) error { return errors.New("not yet") }}
}
