//go:build linux

package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/configure"
	"github.com/winnode/winnode/internal/controller"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/inventory"
)

// operatorOptions say how the demo runs the operator.
type operatorOptions struct {
	config     *rest.Config
	namespace  string
	payloadDir string
	// log receives the operator's log lines (the demo's operator.log,
	// logPath).
	log     io.Writer
	logPath string
	// progress receives each host's upload progress (the demo's view.Bar).
	progress func(inst *winnodev1.WindowsInstance, p host.Progress)
}

// runningOperator is the operator's manager running in this process.
type runningOperator struct {
	cancel context.CancelFunc
	done   chan error
}

// startOperator runs every controller of winnode-operator (controller.NewManager)
// in this process, as cmd/winnode-operator does, minus what a demo does
// not need: leader election, the metrics and health endpoints. Its log goes
// to o.log, not to the terminal (the process-wide loggers of
// controller-runtime and client-go go there too: logs.go).
func startOperator(ctx context.Context, o operatorOptions) (*runningOperator, error) {
	logger := logr.FromSlogHandler(slog.NewTextHandler(o.log, nil))
	mgr, err := controller.NewManager(o.config, ctrl.Options{
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		// controller-runtime refuses a controller name a process used
		// before, even in a stopped manager; the demo's tests run several
		// demos in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}, controller.Options{
		Namespace:  o.namespace,
		PayloadDir: o.payloadDir,
		Version:    cli.Version,
		// The simulated hosts have loopback addresses (127.0.0.10 and up),
		// which the operator refuses unless permitted (--allow-addresses).
		Addresses: inventory.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		TuneInstance: func(c *configure.Configurer) {
			c.Progress = o.progress
		},
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the operator: %w", err)
	}

	// The operator is stopped by stop(), after the demo's signal, so that
	// it stops before the hosts it works on.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &runningOperator{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(runCtx) }()
	select {
	case <-mgr.Elected():
		return r, nil
	case err := <-r.done:
		cancel()
		return nil, fmt.Errorf("the operator stopped at once: %w (see %s)", err, o.logPath)
	case <-ctx.Done():
		_ = r.stop()
		return nil, ctx.Err()
	}
}

// stop stops the manager and waits for its controllers to return.
func (r *runningOperator) stop() error {
	r.cancel()
	var err error
	select {
	case err = <-r.done:
	case <-time.After(time.Minute):
		err = errors.New("the operator did not stop within a minute")
	}
	return err
}
