package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/winnode/winnode/internal/agent"
	"github.com/winnode/winnode/internal/plan"
)

func bootstrapCommand(ctx context.Context, stdin io.Reader, withAgent func(func(a *agent.Agent) (any, *plan.Result, error))) *cobra.Command {
	var o agent.BootstrapOptions
	var ignitionFile string
	cmd := &cobra.Command{
		Use:   `bootstrap --ignition-file F --kubelet-path P [--node-ip IP] [--cluster-dns IP] [--install-dir C:\k] [--dry-run]`,
		Short: "Join this host with a worker Ignition config: install the kubelet as a Windows service",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			withAgent(func(a *agent.Agent) (any, *plan.Result, error) {
				data, err := agent.ReadHostFile(a.Platform, ignitionFile, stdin)
				if err != nil {
					return nil, nil, plan.Errorf(plan.ErrIgnition, "%v", err)
				}
				o.Ignition = data
				doc, err := a.Bootstrap(ctx, o)
				var partial *plan.Result
				if doc != nil {
					partial = doc.Result
				}
				return doc, partial, err
			})
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&ignitionFile, "ignition-file", "", `the worker Ignition config: a host path or - for standard input`)
	f.StringVar(&o.KubeletPath, "kubelet-path", "", `the kubelet binary already on the host (C:\k\kubelet.exe)`)
	f.StringVar(&o.NodeIP, "node-ip", "", "the node's IPv4 address (the kubelet's --node-ip)")
	f.StringVar(&o.ClusterDNS, "cluster-dns", "", "the cluster DNS service IP(s), comma-separated")
	f.StringVar(&o.InstallDir, "install-dir", plan.KDir, "where the kubelet's files go")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and the files it would write; change nothing")
	cmd.MarkFlagRequired("ignition-file")
	cmd.MarkFlagRequired("kubelet-path")
	return cmd
}
