// Command winnode-service is the program Windows' service manager starts
// for the services winnode installs that cannot, or must not, answer it
// themselves (kubelet, kube-proxy, flanneld, csi-proxy: internal/plan's
// wrapped.go says which and why). It answers the service manager, runs the
// program after -- as its child, and writes the program's output to
// --log-file, rotated at --log-file-size and cleared of copies older than
// --log-file-age (internal/svcwrap, internal/logrotate).
//
// It has no version of its own and no command but this one: its bytes
// change only when its code does, so an agent upgrade restarts no service.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/winnode/winnode/internal/svcwrap"
)

const usage = `winnode-service --name NAME [--log-file FILE [--log-file-size SIZE] [--log-file-age AGE]] [--before PROGRAM [--before-arg ARG]...] [--dry-run] -- PROGRAM [ARGS...]

Run PROGRAM as the Windows service NAME: this process answers Windows'
service manager and runs PROGRAM as its child, its output appended to FILE.

  --name NAME           the service's name
  --log-file FILE       where the program's output goes (a Windows path)
  --log-file-size SIZE  rotate FILE at this size: a quantity of bytes such as
                        100M (100,000,000) or 100Mi; 0 never (default 100M)
  --log-file-age AGE    delete rotated copies of FILE older than this, such as
                        168h; 0 keeps them (default 168h)
  --before PROGRAM      run PROGRAM to its end before PROGRAM after --, at each
                        start of the service; when it fails, the service fails
  --before-arg ARG      an argument of --before's PROGRAM (repeated, in order)
  --dry-run             check the command line and print it as JSON; run nothing

Exit status: the program's, when it ends on its own; 0 when the service was
stopped; 2 for a wrong command line.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, dryRun, err := svcwrap.Parse(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprint(stderr, usage)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "winnode-service: %v (run winnode-service --help)\n", err)
		return 2
	case dryRun:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return 1
		}
		return 0
	}
	return c.Run(ctx)
}
