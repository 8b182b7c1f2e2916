// Separate module: it pins the OpenShift release of the test world's
// openshift flavor. github.com/openshift/machine-api-operator is pinned here
// (the proxy serves it at a pseudo-version; a branch query like @master is
// refused), and github.com/openshift/api is taken at the version that
// machine-api-operator's own go.mod requires: hack/tools/openshift-crds.sh
// reads it from there, so the CRDs the test world installs are the ones the
// Machine API of that release is built against.
module github.com/winnode/winnode/hack/tools/openshift

go 1.26.0

require github.com/openshift/machine-api-operator v0.2.1-0.20260226113419-88465550a74b
