// Package platform says which platform the cluster is (--platform): plain
// Kubernetes, whose cluster facts come from kubeadm's objects
// (kube-public/cluster-info, kube-system/kubelet-config), or OpenShift,
// whose facts come from the platform's own configuration (internal/openshift).
package platform

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Platform is a value of --platform.
type Platform string

const (
	// Auto decides from the API server's discovery (Detect).
	Auto Platform = "auto"
	// OpenShift reads cluster facts from OpenShift's configuration objects.
	OpenShift Platform = "openshift"
	// Kubernetes reads cluster facts as on a kubeadm cluster.
	Kubernetes Platform = "kubernetes"
)

// Help is --platform's help, for the operator and winnodectl.
const Help = "the cluster's platform, where cluster facts come from: auto (openshift when the API group config.openshift.io is served, else kubernetes), openshift (the rendered worker MachineConfig, the ControllerConfig, the Infrastructure and Network configs) or kubernetes (kube-public/cluster-info and kubeadm's kubelet-config)"

// ConfigGroup is the API group whose presence marks an OpenShift cluster:
// every OpenShift 4 cluster serves its cluster-wide configuration there
// (Infrastructure, Network, ClusterVersion, ...).
const ConfigGroup = "config.openshift.io"

// Parse checks a --platform value ("" is Auto).
func Parse(s string) (Platform, error) {
	switch p := Platform(s); p {
	case "":
		return Auto, nil
	case Auto, OpenShift, Kubernetes:
		return p, nil
	}
	return "", fmt.Errorf("%q is not one of auto, openshift, kubernetes", s)
}

// Resolve turns p into openshift or kubernetes, with the reason (for an
// event or a log line): Auto asks the API server which API groups it serves.
func Resolve(d discovery.ServerGroupsInterface, p Platform) (Platform, string, error) {
	if p != Auto && p != "" {
		return p, fmt.Sprintf("--platform=%s", p), nil
	}
	groups, err := d.ServerGroups()
	if err != nil {
		return "", "", fmt.Errorf("--platform=auto: asking the API server which API groups it serves (discovery): %w", err)
	}
	if slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == ConfigGroup }) {
		return OpenShift, "the API group " + ConfigGroup + " is served (discovery): an OpenShift cluster", nil
	}
	return Kubernetes, "the API group " + ConfigGroup + " is not served (discovery): not an OpenShift cluster", nil
}

// Serves reports whether the API server serves every resource given, and
// if not, which one is missing (a sentence for the log). The operator's
// optional parts (the Machine sources, the Cluster API bootstrap provider)
// turn on only where their APIs are (internal/controller/optional).
func Serves(d discovery.DiscoveryInterface, resources ...schema.GroupVersionResource) (bool, string, error) {
	for _, gvr := range resources {
		gv := gvr.GroupVersion().String()
		list, err := d.ServerResourcesForGroupVersion(gv)
		if apierrors.IsNotFound(err) {
			return false, "the API server does not serve " + gv, nil
		}
		if err != nil {
			return false, "", fmt.Errorf("asking the API server for %s: %w", gv, err)
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
			return false, "the API server serves " + gv + " without " + gvr.Resource, nil
		}
	}
	return true, "", nil
}
