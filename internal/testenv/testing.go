package testenv

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// This file is what tests call: Main from TestMain, Get from a test. They
// take the two small interfaces below rather than testing.M and testing.TB
// (which satisfy them), so that this package does not import package
// testing: the demo links it into winnodectl, and a shipped binary must
// not carry the test framework (cmd/deps_test.go checks it).

// M is the part of *testing.M that Main uses.
type M interface {
	Run() int
}

// TB is the part of testing.TB that Get and Binary use.
type TB interface {
	Helper()
	Cleanup(func())
	Failed() bool
	Logf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// One control plane per test binary and kind of API server (Options): a
// suite pays each start-up once.
var shared struct {
	sync.Mutex
	main bool
	envs map[string]*sharedEnv
}

type sharedEnv struct {
	env *Env
	err error
}

// Main runs the package's tests and then stops the shared control plane and
// removes built binaries. Call it from TestMain; it exits the process. An
// interrupt (SIGINT, SIGTERM) also stops the control plane before exiting.
func Main(m M) {
	shared.Lock()
	shared.main = true
	shared.Unlock()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "testenv: %v: stopping the control plane\n", s)
		cleanup()
		os.Exit(2)
	}()

	code := m.Run()
	cleanup()
	os.Exit(code)
}

func cleanup() {
	shared.Lock()
	defer shared.Unlock()
	for key, se := range shared.envs {
		if se.env != nil {
			_ = se.env.Stop()
		}
		delete(shared.envs, key)
	}
	RemoveBuiltBinaries()
}

// Get returns the test binary's shared control plane, starting it on first
// use. When the calling test fails, the tail of each component's log is
// printed with it.
func Get(t TB) *Env {
	t.Helper()
	return GetWith(t, Options{})
}

// GetWith is Get for a control plane started with opts: one is shared per
// distinct opts (e.g. Options{NoBootstrapTokenAuth: true} for an API server
// like OpenShift's, besides the default one).
func GetWith(t TB, opts Options) *Env {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.main {
		t.Fatal("testenv.Get: the package's TestMain must call testenv.Main(m), which stops the control plane after the tests")
	}
	key := fmt.Sprintf("%+v", opts)
	se := shared.envs[key]
	if se == nil {
		if shared.envs == nil {
			shared.envs = map[string]*sharedEnv{}
		}
		se = &sharedEnv{}
		se.env, se.err = Start(context.Background(), opts)
		shared.envs[key] = se
	}
	if se.err != nil {
		t.Fatalf("starting the control plane (%s): %v", key, se.err)
	}
	env := se.env
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs:\n%s", env.Logs(40))
		}
	})
	return env
}
