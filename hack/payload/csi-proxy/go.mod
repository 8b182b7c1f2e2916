// Separate module: it pins the CSI proxy release whose csi-proxy.exe the
// payload carries (docs/add-host.md: storage). It is apart from the other
// payload modules so that none bends another's dependency versions: these
// are csi-proxy's own, of 2023 (grpc 1.57), and compile with today's Go.
module github.com/winnode/winnode/hack/payload/csi-proxy

go 1.26.0

// csi-proxy's own go.mod replaces these two (its nested module ./client,
// and a fork of gengo); a dependency's replaces do not apply to the module
// that builds it, and the module zip has no client/ folder, so they are
// repeated here: the client module at the same tag (client/v1.1.3, the
// same commit), and the same gengo fork (used only by csi-proxy's code
// generator, not built).
replace (
	github.com/kubernetes-csi/csi-proxy/client => github.com/kubernetes-csi/csi-proxy/client v1.1.3
	k8s.io/gengo => github.com/mauriciopoppe/gengo v0.0.0-20210525224835-9c78f58f3486
)

require github.com/kubernetes-csi/csi-proxy v1.1.3

require (
	github.com/Microsoft/go-winio v0.6.1 // indirect
	github.com/go-logr/logr v1.2.0 // indirect
	github.com/golang/protobuf v1.5.3 // indirect
	github.com/kubernetes-csi/csi-proxy/client v0.0.0-00010101000000-000000000000 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/mod v0.8.0 // indirect
	golang.org/x/net v0.9.0 // indirect
	golang.org/x/sys v0.11.0 // indirect
	golang.org/x/text v0.9.0 // indirect
	golang.org/x/tools v0.6.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20230525234030-28d5490b6b19 // indirect
	google.golang.org/grpc v1.57.0 // indirect
	google.golang.org/protobuf v1.31.0 // indirect
	k8s.io/klog/v2 v2.100.1 // indirect
)
