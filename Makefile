# winnode: make targets are the interface (see README.md).
SHELL := /bin/bash
GO ?= go
export CGO_ENABLED ?= 0

BIN := bin
CMDS := $(notdir $(wildcard cmd/*))
# The control plane that tests and the demo run, built from source once.
K8S_BIN = $(shell bash hack/tools/build-control-plane.sh 2>/dev/null | tail -n1)

.PHONY: all build control-plane payload standin-flags generate test lint demo bench clean

all: build

## build: every binary to bin/, and the agent for Windows to bin/windows-amd64/
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/...
	@if [ -d cmd/winnode-agent ]; then \
		GOOS=windows GOARCH=amd64 $(GO) build -o $(BIN)/windows-amd64/winnode-agent.exe ./cmd/winnode-agent; \
	fi

## control-plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler into bin/k8s/<version>
control-plane:
	bash hack/tools/build-control-plane.sh

## payload: the Windows programs a real host needs, built from source, into payload/
payload:
	bash hack/payload/build.sh

## standin-flags: the payload's recorded flag lists of kubelet, kube-proxy and flanneld into the stand-ins (after a version change)
standin-flags:
	bash hack/payload/update-standin-flags.sh

## generate: deepcopy, CRDs and RBAC from the Go sources (controller-gen)
generate:
	bash hack/generate.sh

## test: everything CI runs
test:
	bash hack/test.sh

## lint: gofmt, go vet (also of the hack/ modules), staticcheck, generated
## files (hack/lint.sh; make test runs it too)
lint:
	bash hack/lint.sh

## demo: the main job on its embedded default
demo: control-plane
	bash hack/demo.sh

## bench: figures as ratios, not part of test (docs/performance.md); on the
## real payload when `make payload` has built payload/ (or WINNODE_PAYLOAD_DIR)
bench: control-plane
	WINNODE_K8S_BIN=$(K8S_BIN) $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 3h ./...

clean:
	rm -rf $(BIN) payload
