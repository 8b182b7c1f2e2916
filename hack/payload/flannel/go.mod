// Separate module: it pins the flannel release whose flanneld.exe the
// payload carries. It is apart from the other payload modules so that none
// bends another's dependency versions.
module github.com/winnode/winnode/hack/payload/flannel

go 1.26.0

require github.com/flannel-io/flannel v0.28.10
