package view

import (
	"io"
	"os"

	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
)

// IsTerminal reports whether w is a terminal (progress may redraw there).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NodeReady is the status of a Node's Ready condition: "Ready",
// "NotReady" or "Unknown", as kubectl shows it, with ",SchedulingDisabled"
// when cordoned.
func NodeReady(n *corev1.Node) string {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			switch c.Status {
			case corev1.ConditionTrue:
				status = "Ready"
			case corev1.ConditionFalse:
				status = "NotReady"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// NodeAddress is the Node's InternalIP, else its first address.
func NodeAddress(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	if len(n.Status.Addresses) > 0 {
		return n.Status.Addresses[0].Address
	}
	return ""
}
