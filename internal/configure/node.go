package configure

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// FindNode is the one rule that finds the Node of a host, for the operator
// (a host configured before its WindowsInstance existed keeps the host key
// pinned on its Node) and for winnodectl (add finds the node of an earlier
// add, remove the node to remove):
//
//   - when the node name is known (status.nodeName), the Node of that name;
//   - else the Node whose name or any of whose addresses equals address,
//     compared case-insensitively (DNS and Windows host names are); several
//     such Nodes are an error, since none of them can be told to be the host.
//
// It returns nil and no error when there is no such Node.
func FindNode(ctx context.Context, kube kubernetes.Interface, nodeName, address string) (*corev1.Node, error) {
	if nodeName != "" {
		node, err := kube.CoreV1().Nodes().Get(ctx, strings.ToLower(nodeName), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Node %s: %w", nodeName, err)
		}
		return node, nil
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes to find %s: %w", address, err)
	}
	var found []*corev1.Node
	for i := range nodes.Items {
		n := &nodes.Items[i]
		match := strings.EqualFold(n.Name, address)
		for _, a := range n.Status.Addresses {
			match = match || strings.EqualFold(a.Address, address)
		}
		if match {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("several Nodes have the name or address %s; name the node instead", address)
}

// nodeName is the Node the instance's host registers as.
func nodeName(inst *winnodev1.WindowsInstance) string {
	return strings.ToLower(inst.Status.NodeName)
}

// NodeReady reports whether the Node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	if node == nil {
		return false
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
