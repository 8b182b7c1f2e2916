package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/plan"
)

// waitCertificateCommand is `winnode-agent wait-certificate`: run by
// windows_exporter's service before windows_exporter where it serves with
// the kubelet's serving certificate, it waits until that file holds a
// certificate and its key (internal/agent WaitCertificate).
func waitCertificateCommand(ctx context.Context, withAgent func(func(a *agent.Agent) (any, *plan.Result, error))) *cobra.Command {
	var o agent.WaitCertificateOptions
	cmd := &cobra.Command{
		Use:   plan.WaitCertificateCommand + ` [--file C:\var\lib\kubelet\pki\kubelet-server-current.pem]`,
		Short: "Wait until a file holds a certificate and its private key (run by windows_exporter's service before windows_exporter)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				doc, err := a.WaitCertificate(ctx, o)
				return doc, nil, err
			})
			return nil
		},
	}
	cmd.Flags().StringVar(&o.File, "file", plan.KubeletServingCertPath, "the certificate and key file (a host path)")
	return cmd
}
