package joinconfig

import (
	"errors"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/version"
)

// AgentVersions are the versions of winnode-agent an operator supports in
// Pull mode, where the agent comes from the Windows image rather than from
// the operator: either release lines, Oldest to Newest ("v0.4" to "v0.5":
// every v0.4.x and v0.5.x, pre-releases included), or, for an operator
// that is no release (a development build, "dev" or a commit), Exact: that
// version alone.
type AgentVersions struct {
	Oldest string `json:"oldest,omitempty"`
	Newest string `json:"newest,omitempty"`
	Exact  string `json:"exact,omitempty"`
}

// SupportedAgents is the range of agent versions an operator of version
// operatorVersion supports: its own release line and the one before it, of
// the same major version (v0.5.2 supports v0.4 to v0.5; v1.0.0 supports
// v1.0 only).
//
// Why that range: an image's agent renders its plan with its own renderer
// and reads the join config, and the operator approves what it asks for,
// so both ends must agree on the join config, the node's name and the CSRs.
// The operator is upgraded first and the images after it (a new image
// rolls the MachineDeployment): during that roll, Machines still made from
// the old image must join, so one release line back is supported, as
// Kubernetes lets a kubelet be older than its API server. An image newer
// than the operator could ask for what the operator does not know yet, and
// two lines back is a skew no test covers: both are refused. A new major
// version may change the join config itself: none of the old major is
// supported. An operator that is no semantic version (a development build)
// supports only an agent of exactly its own version.
func SupportedAgents(operatorVersion string) AgentVersions {
	v, err := version.ParseSemantic(operatorVersion)
	if err != nil {
		return AgentVersions{Exact: operatorVersion}
	}
	oldest := v.Minor()
	if oldest > 0 {
		oldest--
	}
	return AgentVersions{Oldest: line(v.Major(), oldest), Newest: line(v.Major(), v.Minor())}
}

func line(major, minor uint) string { return fmt.Sprintf("v%d.%d", major, minor) }

// lineRe is a release line, vMAJOR.MINOR.
var lineRe = regexp.MustCompile(`\Av(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})\z`)

func (r AgentVersions) validate() error {
	switch {
	case r.Exact != "" && (r.Oldest != "" || r.Newest != ""):
		return errors.New("exact and oldest/newest are given together")
	case r.Exact != "":
		if !versionRe.MatchString(r.Exact) {
			return fmt.Errorf("exact: %q is not a version", r.Exact)
		}
		return nil
	}
	oldest, err := parseLine(r.Oldest)
	if err != nil {
		return fmt.Errorf("oldest: %w", err)
	}
	newest, err := parseLine(r.Newest)
	if err != nil {
		return fmt.Errorf("newest: %w", err)
	}
	if newest.LessThan(oldest) {
		return fmt.Errorf("oldest %s is newer than newest %s", r.Oldest, r.Newest)
	}
	return nil
}

func parseLine(s string) (*version.Version, error) {
	if !lineRe.MatchString(s) {
		return nil, fmt.Errorf("%q is not a release line vMAJOR.MINOR", s)
	}
	return version.ParseGeneric(s + ".0")
}

// Check says whether the agent of version agentVersion is in the range; the
// error says which range, and what to do.
func (r AgentVersions) Check(agentVersion string) error {
	if err := r.validate(); err != nil {
		return err
	}
	if r.Exact != "" {
		if agentVersion == r.Exact {
			return nil
		}
		return fmt.Errorf("this image's winnode-agent is %s; the operator supports exactly %s (a development build supports only an agent of its own build)", agentVersion, r.Exact)
	}
	v, err := version.ParseSemantic(agentVersion)
	if err != nil {
		return fmt.Errorf("this image's winnode-agent is %q, not a release; the operator supports agents %s", agentVersion, r)
	}
	oldest, _ := parseLine(r.Oldest)
	newest, _ := parseLine(r.Newest)
	at := version.MajorMinor(v.Major(), v.Minor())
	if at.LessThan(oldest) || newest.LessThan(at) {
		return fmt.Errorf("this image's winnode-agent is %s; the operator supports agents %s", agentVersion, r)
	}
	return nil
}

// String is the range in words: "v0.4 to v0.5", or "exactly dev".
func (r AgentVersions) String() string {
	if r.Exact != "" {
		return "exactly " + r.Exact
	}
	if r.Oldest == r.Newest {
		return r.Oldest + ".x"
	}
	return r.Oldest + ".x to " + r.Newest + ".x"
}
