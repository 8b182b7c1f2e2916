package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
)

// readConfig reads the join config (joinconfig.Decode), after checking this
// agent's version against the range of the operator that wrote it, and
// checks that this computer carries the name the operator gave it.
//
// The version comes first, read leniently: a config of a newer schema does
// not decode, and then "this image is too old for that operator" is what
// the administrator needs to read, not the schema's first unknown field.
func (r *joinRun) readConfig(ctx context.Context) error {
	log := r.log("config")
	data, err := ReadHostFile(r.a.Platform, r.o.ConfigFile, bytes.NewReader(nil))
	if err != nil {
		return &plan.Error{Code: plan.ErrJoinConfig, File: r.o.ConfigFile, Message: fmt.Sprintf("%v; the bootstrap data writes it before running the agent", err)}
	}
	if err := r.checkVersion(data); err != nil {
		return err
	}
	cfg, err := joinconfig.Decode(bytes.NewReader(data))
	if err != nil {
		return &plan.Error{Code: plan.ErrJoinConfig, File: r.o.ConfigFile, Message: err.Error()}
	}
	r.cfg = cfg
	r.doc.NodeName = cfg.NodeName
	log.Info("join config read", "machine", cfg.Machine, "node", cfg.NodeName, "server", cfg.Cluster.Server,
		"network", cfg.Network.Mode, "operatorVersion", cfg.OperatorVersion, "agentVersions", cfg.AgentVersions.String())

	r.facts, err = r.a.Platform.HostFacts(ctx)
	if err != nil {
		return plan.Errorf(plan.ErrHost, "reading the host's facts: %v", err)
	}
	if got := plan.NodeName(r.facts.Hostname); got != cfg.NodeName {
		return plan.Errorf(plan.ErrJoinConfig, "this computer is named %s, and the join config names node %s: the bootstrap data renames the computer and reboots before it runs the agent; "+
			"look in cloudbase-init's log for why the rename did not take", r.facts.Hostname, cfg.NodeName)
	}
	log.Info("host", "hostname", r.facts.Hostname, "ipv4", r.facts.IPv4, "defaultIPv4", r.facts.DefaultIPv4, "os", r.facts.ProductName+" "+r.facts.Build)
	return nil
}

// checkVersion refuses to go on when this agent's version is outside the
// range the operator that wrote the config supports.
func (r *joinRun) checkVersion(data []byte) error {
	var peek struct {
		OperatorVersion string                   `json:"operatorVersion"`
		AgentVersions   joinconfig.AgentVersions `json:"agentVersions"`
	}
	if err := json.Unmarshal(data, &peek); err != nil {
		return &plan.Error{Code: plan.ErrJoinConfig, File: r.o.ConfigFile, Message: fmt.Sprintf("join config: not a JSON document: %v", err)}
	}
	if err := peek.AgentVersions.Check(r.a.Version); err != nil {
		return plan.Errorf(plan.ErrUnsupportedVersion, "the operator (winnode %s) does not support this Windows image: %v. "+
			"Build the image again with `winnodectl image` of winnode %s, and roll the MachineDeployment to it (docs/cluster-api.md)",
			peek.OperatorVersion, err, peek.OperatorVersion)
	}
	r.log("config").Info("agent version supported", "agentVersion", r.a.Version, "operatorVersion", peek.OperatorVersion, "agentVersions", peek.AgentVersions.String())
	return nil
}
