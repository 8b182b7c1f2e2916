package identity

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Why a node name is refused (NameError.Reason).
const (
	// NameInvalid: not a DNS-1123 label (what a Windows host name can be,
	// lower-cased).
	NameInvalid = "invalid"
	// NameOfAPIServer: a name in the API server's serving certificate.
	NameOfAPIServer = "api-server"
	// NameOfOtherNode: the name of a Node that is not this host's.
	NameOfOtherNode = "other-node"
)

// NameError is a node name refused by CheckNodeName.
type NameError struct {
	Name   string
	Reason string // NameInvalid, NameOfAPIServer or NameOfOtherNode
	Why    string
}

func (e *NameError) Error() string { return fmt.Sprintf("node name %q %s", e.Name, e.Why) }

// NameFacts is what CheckNodeName knows of the cluster.
type NameFacts struct {
	// APIServerNames are the DNS names of the API server's serving
	// certificate (APIServerNames reads them).
	APIServerNames []string
	// NodeUID says whether a Node of that name exists, and its UID. Nil: the
	// Nodes are not checked (the caller decides which Node is the host's
	// itself, as the configure engine does, by recorded UID or proof).
	NodeUID func(name string) (uid string, exists bool)
	// OwnUID is the UID of the host's own Node, when one is known: a Node
	// of that UID is not "another Node".
	OwnUID string
}

// CheckNodeName says whether name may be a Windows host's node name: a
// DNS-1123 label (a Windows computer name is at most 15 characters; its DNS
// host name at most 63), lower case; no name of the API server's serving
// certificate (a node holding a serving certificate for it could pose as
// the API server to whoever connects by that name); and no other Node's
// name. It is pure, so that the operator's engine, its CSR approver and a
// pre-flight check of a computer name all apply the same rule.
func CheckNodeName(name string, facts NameFacts) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return &NameError{Name: name, Reason: NameInvalid, Why: "is not a valid node name: " + strings.Join(errs, "; ")}
	}
	if IsAPIServerName(name, facts.APIServerNames) {
		return &NameError{Name: name, Reason: NameOfAPIServer, Why: "is a name of the API server's serving certificate; a node of that name could pose as the API server"}
	}
	if facts.NodeUID != nil {
		if uid, ok := facts.NodeUID(name); ok && (facts.OwnUID == "" || uid != facts.OwnUID) {
			return &NameError{Name: name, Reason: NameOfOtherNode, Why: fmt.Sprintf("is the name of Node %s (uid %s), which is not this host's", name, uid)}
		}
	}
	return nil
}

// IsAPIServerName reports whether a DNS name (compared case-insensitively,
// without a trailing dot) is one of the API server's certificate's names,
// wildcards included (*.example.com covers one label under example.com).
func IsAPIServerName(name string, apiServerNames []string) bool {
	name = NormalizeDNS(name)
	for _, n := range apiServerNames {
		n = NormalizeDNS(n)
		if n == name {
			return true
		}
		if rest, ok := strings.CutPrefix(n, "*."); ok {
			if _, after, found := strings.Cut(name, "."); found && after == rest {
				return true
			}
		}
	}
	return false
}

// NormalizeDNS is a DNS name as compared: lower case, no trailing dot.
func NormalizeDNS(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}
