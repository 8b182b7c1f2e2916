package testenv

import (
	"context"
	"os"
	"strings"
	"sync"
)

// toolProgram is a test-world program built from a Go module of its own
// under hack/tools (the Machine API's and Cluster API's controllers): the
// path in an environment variable (hack/test.sh sets it), or what its build
// script builds (minutes the first time, then copied from its cache) and
// prints on its last line.
type toolProgram struct {
	// env names the environment variable with the program's path.
	env string
	// script builds the program, relative to the source tree.
	script string
	// what the program runs, for the log and errors.
	what string

	// path is the program's path once the script printed it, so that each
	// environment after the first skips the script.
	mu   sync.Mutex
	path string
}

// binary is the program's path, from the environment or the build script.
func (p *toolProgram) binary() (string, error) {
	if bin := os.Getenv(p.env); bin != "" {
		return bin, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path == "" {
		path, err := runScript(p.script, "building "+p.what)
		if err != nil {
			return "", err
		}
		p.path = path
	}
	return p.path, nil
}

// startToolProgram starts the program with args, its log at name.log in the
// environment's folder, and waits until each of controllers (by the names
// controller-runtime logs them under) runs its workers: then its caches are
// synced and it acts on what the test creates.
func (e *Env) startToolProgram(ctx context.Context, prog *toolProgram, name string, controllers []string, args ...string) error {
	bin, err := prog.binary()
	if err != nil {
		return err
	}
	p, err := startProcess(e.Dir, name, bin, args...)
	if err != nil {
		return err
	}
	e.procs = append(e.procs, p)
	return waitFor(ctx, p, prog.what+" ("+strings.Join(controllers, ", ")+")", func(context.Context) (bool, error) {
		data, err := os.ReadFile(p.logPath)
		if err != nil {
			return false, nil
		}
		for _, c := range controllers {
			if !strings.Contains(string(data), `"Starting workers" controller="`+c+`"`) {
				return false, nil
			}
		}
		return true, nil
	})
}
