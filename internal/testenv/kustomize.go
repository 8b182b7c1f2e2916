package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvKustomize names a kustomize program to use instead of the one pinned
// in hack/tools/dev/go.mod (which is otherwise built through the module
// proxy, once, then taken from Go's build cache).
const EnvKustomize = "KUSTOMIZE"

// KustomizeBuild is the output of `kustomize build config/<dir>` of the
// source tree: the manifests a cluster gets from that folder, for the tests
// that check them (config) or run what they configure (test/e2e).
func KustomizeBuild(ctx context.Context, dir string) ([]byte, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bin, err := kustomizeBinary(ctx, root)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "build", filepath.Join(root, "config", dir))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kustomize build config/%s: %w\n%s", dir, err, stderr.String())
	}
	return out, nil
}

// kustomizeBinary is $KUSTOMIZE, or the kustomize of hack/tools/dev
// (`go tool -n` builds it into Go's build cache and prints its path).
func kustomizeBinary(ctx context.Context, root string) (string, error) {
	if k := os.Getenv(EnvKustomize); k != "" {
		return k, nil
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "-C", filepath.Join(root, "hack/tools/dev"), "tool", "-n", "kustomize")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building kustomize from hack/tools/dev: %w\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
