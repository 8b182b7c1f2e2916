// Separate module, standard library only: the client of the simulated
// cloud's HTTP API that both test-world programs, in their own modules
// (hack/tools/openshift and hack/tools/capi, each pinning another
// Kubernetes release), use through a replace directive to this folder.
module github.com/winnode/winnode/hack/tools/winsimcloud

go 1.26.0
