package configure

import (
	"context"
	"errors"
	"fmt"
	"time"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// Run calls Configure until the instance is Ready or Failed: the
// operator-less loop of winnodectl add and upgrade (the operator's reconciler
// requeues instead). Between calls it runs between (winnodectl's approval of
// its own node's CSRs) and waits as Configure asked, but at most 2 s, because
// nothing else would wake it when a CSR it must approve appears. It stops at
// the first error: without an operator, the administrator decides when to
// retry.
func (c *Configurer) Run(ctx context.Context, inst *winnodev1.WindowsInstance, between func(ctx context.Context) error) error {
	for {
		res, err := c.Configure(ctx, inst)
		if err != nil {
			return err
		}
		switch inst.Status.Phase {
		case winnodev1.PhaseReady:
			return nil
		case winnodev1.PhaseFailed:
			return errors.New(inst.Status.LastError)
		}
		if between != nil {
			if err := between(ctx); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("configuring %s: %w (last step %s)", inst.Spec.Address, context.Cause(ctx), inst.Status.Step)
		case <-time.After(min(max(res.RequeueAfter, 200*time.Millisecond), 2*time.Second)):
		}
	}
}

// RunDeconfigure is Run for Deconfigure.
func (c *Configurer) RunDeconfigure(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	for {
		res, err := c.Deconfigure(ctx, inst)
		if err != nil {
			return err
		}
		if res.RequeueAfter == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deconfiguring %s: %w (last step %s)", inst.Spec.Address, context.Cause(ctx), inst.Status.Step)
		case <-time.After(res.RequeueAfter):
		}
	}
}
