#!/usr/bin/env bash
# make lint, and the lint step of make test (hack/test.sh): what reviewers
# check before reading the code.
#   1. gofmt, on every Go file of every module of the repository;
#   2. go vet of the main module, for Linux and for Windows (the Windows-only
#      code of the agent, the plan, winnodectl and wincmd);
#   3. go vet of every separate module under hack/ that has packages (the
#      tools modules that build the test world's programs, the simulated
#      cloud's wire types); the payload modules and the control plane's only
#      pin programs behind a build tag and have none;
#   4. staticcheck (through the Go module proxy, at a pinned version);
#   5. the generated files (deepcopy, CRDs, RBAC) match the Go sources.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'lint: %s\n' "$*" >&2; }

say "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"
	echo "$unformatted"
	exit 1
fi

say "go vet (linux, windows)"
go vet ./...
GOOS=windows go vet ./cmd/winnode-agent/... ./cmd/winnodectl/... ./internal/agent/... ./internal/plan/... ./internal/wincmd/...

for mod in $(bash hack/modules.sh); do
	say "go vet ($mod)"
	go -C "$mod" vet ./...
done

say "staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

say "generated files match the Go sources"
bash hack/generate.sh --verify
