package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/cli/view"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/metricstls"
)

func newRemoveCommand(s Streams) *cobra.Command {
	var hf hostFlags
	cmd := &cobra.Command{
		Use:   "remove HOST --ssh-key FILE [--user Administrator] [--port 22]",
		Short: "Take a host added with winnodectl add out of the cluster",
		Long: `Take a host that winnodectl add made a node out of the cluster, with no
operator running, by the operator's own steps (the same code):

  drain        cordon the node and evict its pods, as kubectl drain does
  remove       winnode-agent.exe remove: services in reverse order, then
               files (logs are kept)
  delete-node  delete the Node and revoke the host's bootstrap tokens

HOST is the address given to add, or the node's name. The host key add
pinned (ConfigMap kube-system/winnode-host-keys, which nodes cannot write)
is checked, or with no pin kept there the fingerprint of --host-key; a host
that cannot be reached is left alone with a warning, and the Node is deleted
all the same, and its pin forgotten.

Hosts the operator manages (listed in ConfigMap windows-instances) are
removed by taking them out of the ConfigMap instead.`,
		Example: `  # The reverse of winnodectl add 10.0.0.7
  winnodectl remove 10.0.0.7 --ssh-key ~/.ssh/winnode

  # By node name
  winnodectl remove win-0a1b2c3d --ssh-key ~/.ssh/winnode`,
		Args: exactArgs("HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := hf.check(args[0]); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), hf.timeout)
			defer cancel()
			return runRemove(ctx, s, hf, args[0])
		},
	}
	hf.add(cmd.Flags(), 10*time.Minute)
	addHostKeyFlag(cmd, &hf.hostKey)
	return cmd
}

func runRemove(ctx context.Context, s Streams, hf hostFlags, target string) error {
	sess, err := hf.connect()
	if err != nil {
		return err
	}
	node, err := configure.FindNode(ctx, sess.kube, "", target)
	if err != nil {
		return err
	}
	if node == nil {
		return fmt.Errorf("no Node has the name or address %s: nothing that winnodectl add left in the cluster (if add stopped half-way, run add again, then remove)", target)
	}
	if owner := instanceFor(ctx, sess, node.Name); owner != "" {
		return fmt.Errorf("node %s belongs to WindowsInstance %s, which the operator manages: take the host out of ConfigMap windows-instances (or delete the WindowsInstance) instead", node.Name, owner)
	}
	address := target
	if a := view.NodeAddress(node); a != "" {
		address = a
	}
	h, err := hf.host(address)
	if err != nil {
		return fmt.Errorf("node %s has address %s, which cannot be reached over SSH: %v", node.Name, address, err)
	}
	inst := newHostInstance(h)
	inst.Status.Phase = winnodev1.PhaseReady
	inst.Status.NodeName = node.Name
	// The administrator named this Node: it is the one to drain and delete
	// (deconfigure deletes only the Node of the recorded UID).
	inst.Status.NodeUID = string(node.UID)
	// A Node winnode configured: its host is cleaned.
	inst.Status.HostConfigured = true
	// The key add pinned, never the Node's annotation (pins.go).
	if err := usePin(ctx, sess.kube, inst, node); err != nil {
		return err
	}
	if inst.Status.HostKey == "" && inst.Spec.HostKeyFingerprint == "" {
		return fmt.Errorf("node %s has no host key pinned in ConfigMap %s/%s, so the host cannot be checked: was it added by winnode? If so, %s", node.Name, joinNamespace, hostKeysConfigMap, hostKeyHelp)
	}

	steps := newStepPrinter(s.Out, view.IsTerminal(s.Out), time.Now())
	cfg, err := hf.engine(s, sess, steps)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "Removing %s (Node %s) from the cluster at %s, without the operator:\n", address, node.Name, sess.apiServer)
	err = cfg.RunDeconfigure(ctx, inst)
	steps.end(err == nil)
	switch {
	case err == nil:
		if err := deletePin(ctx, sess.kube, node.Name); err != nil {
			return err
		}
		if err := forgetMetricsCertificate(ctx, sess, node.Name); err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "Node %s is gone and %s is clean (%s in all).\n", node.Name, address, time.Since(steps.start).Round(10*time.Millisecond))
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return WithCode(ExitTimeout, fmt.Errorf("removing %s: not done within --timeout %s (last step %s): %w; running remove again continues", address, hf.timeout, orDash(inst.Status.Step), err))
	case ctx.Err() != nil:
		return WithCode(ExitInterrupted, fmt.Errorf("removing %s: interrupted at step %s; running remove again continues", address, orDash(inst.Status.Step)))
	}
	return fmt.Errorf("removing %s: %w; fix the cause and run remove again", address, err)
}

// forgetMetricsCertificate drops the node's windows_exporter certificate
// that add kept (metricsStore).
func forgetMetricsCertificate(ctx context.Context, sess *session, node string) error {
	store, err := metricsStore(sess)
	if err == nil {
		err = store.Forget(ctx, node)
	}
	if err != nil {
		return fmt.Errorf("node %s is removed, but its windows_exporter certificate is left in Secret %s/%s: %w", node, joinNamespace, metricstls.ServingSecretName, err)
	}
	return nil
}

// instanceFor names the WindowsInstance whose address or node is target,
// or "" (also when the cluster has no WindowsInstance API: no operator).
func instanceFor(ctx context.Context, sess *session, target string) string {
	c, err := NewClient(sess.config)
	if err != nil {
		return ""
	}
	var list winnodev1.WindowsInstanceList
	if err := c.List(ctx, &list); err != nil {
		return ""
	}
	for _, i := range list.Items {
		if strings.EqualFold(i.Status.NodeName, target) || strings.EqualFold(i.Spec.Address, target) {
			return i.Name
		}
	}
	return ""
}
