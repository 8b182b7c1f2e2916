//go:build windows

package svcwrap

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/windows/svc"
)

// Run runs the program as the Windows service c.Name when the SCM started
// this process (svc.IsWindowsService), else in the foreground until ctx
// ends (for a try at a console).
func (c Command) Run(ctx context.Context) int {
	cmd, log, err := c.command(func(p string) (string, error) { return p, nil })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer log.Close()
	// The program before the service's own, ended by the service's stop:
	// its process is made where the stop's context is known.
	serveCtx := func(ctx context.Context) (int, error) {
		before, err := c.beforeCommand(ctx, func(p string) (string, error) { return p, nil }, log)
		if err != nil {
			return 1, err
		}
		return serve(ctx, before, cmd, log)
	}
	isService, err := svc.IsWindowsService()
	if err != nil || !isService {
		code, err := serveCtx(ctx)
		if err != nil {
			fmt.Fprintf(os.Stderr, "winnode-service %s: %v\n", c.Name, err)
		}
		return code
	}
	h := &serviceHandler{run: serveCtx}
	if err := svc.Run(c.Name, h); err != nil {
		fmt.Fprintf(log, "winnode-service %s: %v\n", c.Name, err)
		return 1
	}
	return h.code
}

// serviceHandler answers the SCM (svc.Handler): Running once the program
// started, StopPending on Stop or Shutdown while the program is killed, and
// the program's exit code as the service-specific exit code when it ends on
// its own (the SCM then counts a failure and runs the recovery actions).
type serviceHandler struct {
	run  func(context.Context) (int, error)
	code int
}

func (h *serviceHandler) Execute(_ []string, requests <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.code, _ = h.run(ctx)
	}()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case <-done:
			return h.code != 0, uint32(h.code)
		case req := <-requests:
			switch req.Cmd {
			case svc.Interrogate:
				status <- req.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending}
				cancel()
				<-done
				return false, 0
			}
		}
	}
}
