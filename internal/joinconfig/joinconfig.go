// Package joinconfig is the join config of Pull mode: what the Cluster API
// bootstrap data of a Pull-mode WinnodeConfig writes to C:\k\join.json on
// the Windows host, and what `winnode-agent join` reads there to make the
// host a node by itself (docs/cluster-api.md, "Pull mode").
//
// The operator writes it (internal/capibootstrap), the agent baked into the
// Windows image reads it, and the two may be of different winnode
// versions: the config names the operator's version and the range of agent
// versions that operator supports (version.go), and an agent outside that
// range refuses to join. Decode is strict (no unknown field, one JSON
// object, bounded size) because a config from a newer operator is not to
// be half-understood.
//
// The config holds a secret, the bootstrap token: it is a Secret, whose
// String and LogValue say "<redacted>", so that printing or logging a
// Config never shows it; only Encode writes it.
package joinconfig

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/winnode/winnode/internal/kubeconfig"
	"github.com/winnode/winnode/internal/plan"
)

// SchemaVersion is the join config's schema. A change an older agent
// cannot read gets a new version, which that agent refuses by its version.
const SchemaVersion = "winnode.io/join/v1"

// Where Pull mode's files are on the host.
const (
	// Path is where the bootstrap data writes the join config, readable by
	// SYSTEM and Administrators only (it holds the bootstrap token).
	Path = `C:\k\join.json`
	// ImageManifestPath is the payload's manifest as the Windows image
	// carries it (`winnodectl image`): every payload file is baked at its
	// host path, and `winnode-agent join` checks each against this.
	ImageManifestPath = `C:\k\payload-manifest.json`
	// LogDir and LogPath are the host's log of `winnode-agent join` (its
	// standard error also goes to cloudbase-init's log).
	LogDir  = `C:\var\log\winnode-agent`
	LogPath = LogDir + `\join.log`
)

// maxBytes bounds what Decode reads: the config lives in user data of at
// most 16 KiB.
const maxBytes = 64 << 10

// Config is everything `winnode-agent join` needs beyond what the image
// carries: who wrote it, the cluster to join and how, the node's name and
// the credential to join with.
type Config struct {
	SchemaVersion string `json:"schemaVersion"`
	// OperatorVersion is the version of the operator that wrote the
	// config; it is part of the plan's version (plan.RenderInput).
	OperatorVersion string `json:"operatorVersion"`
	// AgentVersions are the agent versions that operator supports
	// (SupportedAgents).
	AgentVersions AgentVersions `json:"agentVersions"`
	// Machine is the Cluster API Machine, "<namespace>/<name>", for the
	// host's log only.
	Machine string `json:"machine"`
	// NodeName is the Node the host registers: the computer name winnode
	// assigned (the WinnodeConfig's status.computerName), lower-cased as
	// the kubelet lower-cases the host name.
	NodeName string  `json:"nodeName"`
	Cluster  Cluster `json:"cluster"`
	Network  Network `json:"network"`
	// BootstrapToken is the workload cluster's bootstrap token
	// ("<id>.<secret>") the kubelet joins with.
	BootstrapToken Secret `json:"bootstrapToken"`
}

// Cluster are the facts of the workload cluster the host joins.
type Cluster struct {
	// Server is the API server's URL, https.
	Server string `json:"server"`
	// CAData is the cluster CA bundle (PEM).
	CAData []byte `json:"caData"`
	// ClusterDNS are the cluster DNS service's IPs; ClusterDomain its
	// domain ("" is cluster.local).
	ClusterDNS    []string `json:"clusterDNS,omitempty"`
	ClusterDomain string   `json:"clusterDomain,omitempty"`
	// CloudProvider is the kubelet's --cloud-provider: "" or "external".
	CloudProvider string `json:"cloudProvider,omitempty"`
}

// Network is the pod network's facts without the node's subnet, which the
// agent reads from its Node once the cluster gave it one.
type Network struct {
	// Mode is plan.NetworkFlannel or plan.NetworkExternal (OVN-Kubernetes'
	// hybrid overlay is OpenShift's, whose Windows Machines come from the
	// Machine API and are configured over SSH).
	Mode        string `json:"mode"`
	ClusterCIDR string `json:"clusterCIDR,omitempty"`
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	NetworkName string `json:"networkName,omitempty"`
	VNI         int    `json:"vni,omitempty"`
	Port        int    `json:"port,omitempty"`
}

// Facts are the plan's network facts with the node's subnet podCIDR ("":
// none yet).
func (n Network) Facts(podCIDR string) plan.NetworkFacts {
	return plan.NetworkFacts{Mode: n.Mode, ClusterCIDR: n.ClusterCIDR, ServiceCIDR: n.ServiceCIDR,
		PodCIDR: podCIDR, NetworkName: n.NetworkName, VNI: n.VNI, Port: n.Port}
}

// FromFacts is the join config's form of network facts (the node's subnet
// left out).
func FromFacts(f plan.NetworkFacts) Network {
	return Network{Mode: f.Mode, ClusterCIDR: f.ClusterCIDR, ServiceCIDR: f.ServiceCIDR,
		NetworkName: f.NetworkName, VNI: f.VNI, Port: f.Port}
}

// Secret is a value that must not be printed: String, GoString and
// LogValue redact it; JSON carries it as it is.
type Secret string

const redacted = "<redacted>"

func (Secret) String() string       { return redacted }
func (Secret) GoString() string     { return redacted }
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// Reveal is the value itself, for the one place that must write it.
func (s Secret) Reveal() string { return string(s) }

// BootstrapKubeconfig is the kubeconfig the kubelet starts with: the
// cluster's API server and CA, and the bootstrap token. It holds the
// token: it goes only to C:\k\bootstrap-kubeconfig.
func (c *Config) BootstrapKubeconfig() ([]byte, error) {
	out, err := kubeconfig.Bootstrap(c.Cluster.Server, c.Cluster.CAData, c.BootstrapToken.Reveal())
	if err != nil {
		return nil, fmt.Errorf("join config: the bootstrap kubeconfig: %w", err)
	}
	return out, nil
}

// Encode is the config as the bootstrap data carries it: compact JSON, the
// same bytes for the same config.
func Encode(c *Config) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// Decode reads a join config strictly: one JSON object of the schema, no
// unknown field, nothing after it, valid (Validate). Errors name the field.
func Decode(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("join config: %w", err)
	}
	if len(data) > maxBytes {
		return nil, fmt.Errorf("join config: larger than %d bytes; this is not a join config winnode wrote", maxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("join config: not a JSON document of schema %s: %w", SchemaVersion, err)
	}
	if dec.More() {
		return nil, errors.New("join config: unexpected data after the JSON document")
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// machineRe is "<namespace>/<name>" of Kubernetes names.
var machineRe = regexp.MustCompile(`\A[a-z0-9][a-z0-9.-]{0,252}/[a-z0-9][a-z0-9.-]{0,252}\z`)

// versionRe is what a version string may hold: printable, no spaces.
var versionRe = regexp.MustCompile(`\A[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}\z`)

// Validate checks every field; the error names each one that is wrong.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.SchemaVersion != SchemaVersion {
		bad("schemaVersion", "%q is not %q: this agent reads join configs of schema %s; the operator that wrote it is of another winnode version", c.SchemaVersion, SchemaVersion, SchemaVersion)
	}
	if !versionRe.MatchString(c.OperatorVersion) {
		bad("operatorVersion", "%q is not a version", c.OperatorVersion)
	}
	if err := c.AgentVersions.validate(); err != nil {
		bad("agentVersions", "%v", err)
	}
	if !machineRe.MatchString(c.Machine) {
		bad("machine", "%q is not <namespace>/<name>", c.Machine)
	}
	if len(c.NodeName) > 15 || len(validation.IsDNS1123Label(c.NodeName)) > 0 {
		bad("nodeName", "%q is not a lower-case computer name of 1 to 15 letters, digits and hyphens", c.NodeName)
	}
	errs = append(errs, c.Cluster.validate()...)
	if m := c.Network.Mode; m != plan.NetworkFlannel && m != plan.NetworkExternal {
		bad("network.mode", "%q is not one of %s, %s (the modes of Pull mode)", m, plan.NetworkFlannel, plan.NetworkExternal)
	} else if err := c.Network.Facts("").Validate(); err != nil {
		bad("network", "%v", err)
	}
	if !bootstraputil.IsValidBootstrapToken(string(c.BootstrapToken)) {
		// Never the value: it is a secret, even when malformed.
		bad("bootstrapToken", "not a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}")
	}
	if len(errs) > 0 {
		return fmt.Errorf("join config: %w", errors.Join(errs...))
	}
	return nil
}

func (c Cluster) validate() []error {
	var errs []error
	if u, err := url.Parse(c.Server); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		errs = append(errs, fmt.Errorf("cluster.server: %q is not an https URL of an API server", c.Server))
	}
	if err := checkCA(c.CAData); err != nil {
		errs = append(errs, fmt.Errorf("cluster.caData: %w", err))
	}
	for i, ip := range c.ClusterDNS {
		if net.ParseIP(ip) == nil {
			errs = append(errs, fmt.Errorf("cluster.clusterDNS[%d]: %q is not an IP address", i, ip))
		}
	}
	if c.ClusterDomain != "" && len(validation.IsDNS1123Subdomain(c.ClusterDomain)) > 0 {
		errs = append(errs, fmt.Errorf("cluster.clusterDomain: %q is not a DNS domain", c.ClusterDomain))
	}
	if c.CloudProvider != "" && c.CloudProvider != "external" {
		errs = append(errs, fmt.Errorf("cluster.cloudProvider: %q is not \"\" or external", c.CloudProvider))
	}
	return errs
}

// checkCA accepts a PEM bundle of at least one certificate and nothing
// else.
func checkCA(data []byte) error {
	rest := bytes.TrimSpace(data)
	n := 0
	for len(rest) > 0 {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil || block.Type != "CERTIFICATE" {
			return errors.New("not a PEM bundle of certificates")
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %w", n+1, err)
		}
		n++
		rest = bytes.TrimSpace(rest)
	}
	if n == 0 {
		return errors.New("no certificate")
	}
	return nil
}
