package agent

import (
	"context"
	"log/slog"
	"time"

	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
)

// JoinOptions are the inputs of `winnode-agent join` (Pull mode): the join
// config the bootstrap data wrote, and how long to wait for the Node.
type JoinOptions struct {
	// ConfigFile is the join config's host path (joinconfig.Path).
	ConfigFile string
	// ManifestFile is the image's payload manifest (joinconfig.ImageManifestPath).
	ManifestFile string
	// Timeout bounds the wait for the Node and its pod subnet (default 1h).
	Timeout time.Duration
	// PollInterval is how often the Node is read (default 2s).
	PollInterval time.Duration
}

// JoinDocument is what `winnode-agent join` prints: the node it joined, the
// pod subnet it got, and the apply's result. It holds no secret.
type JoinDocument struct {
	SchemaVersion string         `json:"schemaVersion"`
	NodeName      string         `json:"nodeName"`
	PlanVersion   string         `json:"planVersion"`
	PodCIDR       string         `json:"podCIDR,omitempty"`
	Results       []*plan.Result `json:"results"`
}

// Join makes this host a node of the cluster its join config names, with
// nothing but what the Windows image and the bootstrap data brought (Pull
// mode, docs/cluster-api.md): no operator reaches the host. Every step is
// logged to the host's log (joinconfig.LogPath) besides a.Log, so that an
// administrator finds why a Machine never became a node; on failure the
// error is the log's last line.
//
// The steps, in order, each in the file named for it:
//
//  1. join_log.go: secure winnode's folders and the log's, open the log;
//  2. join_config.go: read the join config; check this agent's version
//     against the operator's range, and the computer's name against the
//     node's;
//  3. join_image.go: check every payload file the image carries against
//     the image's manifest;
//  4. join_plan.go: render the plan here, with the renderer the operator
//     uses (plan.Render), stage the files it generates, and apply it once:
//     kube-proxy's service writes what depends on the pod subnet when it
//     starts (pod-network, podnetwork.go), as in Push mode;
//  5. join_node.go: wait, with the node's own credentials, for the Node
//     and, in flannel mode, its pod subnet.
//
// Running it again with the same config changes nothing that is in place.
func (a *Agent) Join(ctx context.Context, o JoinOptions) (*JoinDocument, error) {
	closeLog, err := a.openJoinLog(ctx)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	r := &joinRun{a: a, o: o.withDefaults(), doc: &JoinDocument{SchemaVersion: plan.SchemaVersion, Results: []*plan.Result{}}}
	steps := []func(context.Context) error{
		r.readConfig,  // join_config.go
		r.preflight,   // preflight.go
		r.checkImage,  // join_image.go
		r.applyPlan,   // join_plan.go
		r.waitForNode, // join_node.go
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			a.Log.Error("join failed", "err", err)
			return r.doc, err
		}
	}
	a.Log.Info("joined", "node", r.doc.NodeName, "plan", r.doc.PlanVersion, "podCIDR", r.doc.PodCIDR)
	return r.doc, nil
}

func (o JoinOptions) withDefaults() JoinOptions {
	if o.ConfigFile == "" {
		o.ConfigFile = joinconfig.Path
	}
	if o.ManifestFile == "" {
		o.ManifestFile = joinconfig.ImageManifestPath
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Hour
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	return o
}

// joinRun is one join under way: what each step learns for the ones after
// it.
type joinRun struct {
	a   *Agent
	o   JoinOptions
	doc *JoinDocument

	cfg      *joinconfig.Config // readConfig
	facts    HostFacts          // readConfig: the host's name and addresses
	manifest *payload.Manifest  // checkImage
	// bootstrapKubeconfig is the kubelet's bootstrap kubeconfig (applyPlan):
	// it holds the token, so it is never logged.
	bootstrapKubeconfig []byte
	podCIDR             string // waitForNode: the Node's pod subnet
}

// log is the agent's logger with the step's name.
func (r *joinRun) log(step string) *slog.Logger { return r.a.Log.With("step", step) }
