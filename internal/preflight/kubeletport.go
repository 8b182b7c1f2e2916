package preflight

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/winnode/winnode/internal/plan"
)

// CheckKubeletPort: once the host's kubelet has joined, the API server
// reaches it on its port (the Node's status.daemonEndpoints, 10250), as
// kubectl logs, exec, port-forward and metrics need. The operator asks the
// API server for the kubelet's /healthz through the node proxy; err is
// that request's error. winnode opens the port in the host's own firewall,
// so a failure is a firewall outside the host (a security group, a network
// security group, an appliance) or a route: a warning, never a stop, since
// the node works without it. A request the API server refuses to the
// operator itself (RBAC) means the check could not run.
func CheckKubeletPort(node string, port int32, err error) plan.PreflightResult {
	if err == nil {
		return pass(KubeletPort, "the API server reached the kubelet of node %s on port %d", node, port)
	}
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return CannotRun(KubeletPort, err)
	}
	return warn(KubeletPort, "the API server cannot reach the kubelet of node %s on port %d (%v): kubectl logs, exec, port-forward and metrics fail for its pods; open TCP %d from the control plane to the host in the network's firewalls (security groups, network security groups, appliances): winnode opens it in the host's own firewall", node, port, err, port)
}
