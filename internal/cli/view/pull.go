package view

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/capibootstrap"
)

// Where a Cluster API Machine in Pull mode stands (PullRow.Stage), in the
// order its join goes through them.
const (
	// StageWaiting: no bootstrap data yet; Reason says why (the
	// WinnodeConfig's Ready reason).
	StageWaiting = "Waiting"
	// StageCredentialIssued: a bootstrap token exists in the workload
	// cluster, the data is not written yet.
	StageCredentialIssued = "CredentialIssued"
	// StageDataWritten: the data is written; the host has not joined.
	StageDataWritten = "DataWritten"
	// StageJoinTimedOut: no nodeRef long after the data was written (the
	// host's logs say why).
	StageJoinTimedOut = "JoinTimedOut"
	// StageNodeRegistered: Cluster API linked the Machine to its Node.
	StageNodeRegistered = "NodeRegistered"
	// StageReady: the Machine's Node is Ready (Cluster API's NodeReady).
	StageReady = "Ready"
)

// PullRow is one Cluster API Machine in Pull mode, as `status` shows it:
// it has no WindowsInstance, and its host is never reached by the
// operator; everything here is read from the management cluster.
type PullRow struct {
	// Machine is "<namespace>/<name>"; Cluster its Cluster's name.
	Machine string `json:"machine"`
	Cluster string `json:"cluster"`
	// ComputerName is the name winnode gave the host.
	ComputerName string `json:"computerName,omitempty"`
	Stage        string `json:"stage"`
	// Node is the Machine's nodeRef, in its workload cluster.
	Node    string    `json:"node,omitempty"`
	Created time.Time `json:"created"`
	// Reason is why the Machine waits or timed out (a condition's message).
	Reason string `json:"reason,omitempty"`
}

// NewPullRow describes the Pull Machine m of config cfg (m nil: not read).
func NewPullRow(cfg *bootstrapv1.WinnodeConfig, m *clusterv1.Machine) PullRow {
	r := PullRow{Machine: cfg.Namespace + "/" + owningMachine(cfg), Cluster: cfg.Labels[clusterv1.ClusterNameLabel],
		ComputerName: cfg.Status.ComputerName, Created: cfg.CreationTimestamp.Time}
	joined := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionNodeJoined)
	written := cfg.Status.Initialization.DataSecretCreated != nil && *cfg.Status.Initialization.DataSecretCreated
	switch {
	case m != nil && m.Status.NodeRef.IsDefined():
		r.Node, r.Stage = m.Status.NodeRef.Name, StageNodeRegistered
		if meta.IsStatusConditionTrue(m.Status.Conditions, clusterv1.MachineNodeReadyCondition) {
			r.Stage = StageReady
		}
	case written && joined != nil && joined.Reason == bootstrapv1.ReasonNodeJoinTimedOut:
		r.Stage, r.Reason = StageJoinTimedOut, joined.Message
	case written:
		r.Stage = StageDataWritten
	case cfg.Status.BootstrapToken != nil:
		r.Stage = StageCredentialIssued
	default:
		r.Stage = StageWaiting
		if c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionReady); c != nil {
			r.Reason = c.Reason + ": " + c.Message
		}
	}
	return r
}

// owningMachine is the name of the Machine among cfg's owners ("" when
// none yet).
func owningMachine(cfg *bootstrapv1.WinnodeConfig) string {
	for _, o := range cfg.OwnerReferences {
		if o.Kind == "Machine" {
			return o.Name
		}
	}
	return ""
}

// ListPullRows reads every WinnodeConfig of mode Pull and its Machine. A
// cluster without the WinnodeConfig API has none: no error. A user who may
// not list WinnodeConfigs gets an error (status prints it as a note).
func ListPullRows(ctx context.Context, c client.Client) ([]PullRow, error) {
	rows := []PullRow{}
	var list bootstrapv1.WinnodeConfigList
	if err := c.List(ctx, &list); err != nil {
		if NoInstanceAPI(err) {
			return rows, nil
		}
		return rows, fmt.Errorf("listing WinnodeConfigs: %w", err)
	}
	for i := range list.Items {
		cfg := &list.Items[i]
		if capibootstrap.ModeOfConfig(cfg) != bootstrapv1.ModePull {
			continue
		}
		var m *clusterv1.Machine
		if name := owningMachine(cfg); name != "" {
			got := &clusterv1.Machine{}
			switch err := c.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: name}, got); {
			case err == nil:
				m = got
			case !NoInstanceAPI(err):
				return nil, fmt.Errorf("reading Machine %s/%s of WinnodeConfig %s: %w", cfg.Namespace, name, cfg.Name, err)
			}
		}
		rows = append(rows, NewPullRow(cfg, m))
	}
	return rows, nil
}

// WritePullTable prints Pull Machines sorted by Machine.
func WritePullTable(w io.Writer, rows []PullRow, now time.Time) error {
	rows = append([]PullRow(nil), rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Machine < rows[j].Machine })
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "MACHINE\tCLUSTER\tCOMPUTER NAME\tSTAGE\tNODE\tAGE\tREASON")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(r.Machine, 0), cell(r.Cluster, 0), cell(r.ComputerName, 0),
			cell(r.Stage, 0), cell(r.Node, 0), age(r.Created, now), cell(r.Reason, lastErrorWidth))
	}
	return tw.Flush()
}
