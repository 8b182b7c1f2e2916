package view

import (
	"fmt"
	"io"

	"github.com/winnode/winnode/internal/plan"
)

// WritePreflightTable prints the pre-flight checks (winnodectl check): one
// line per check with its result and message, which names the fix.
func WritePreflightTable(w io.Writer, results []plan.PreflightResult) error {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "CHECK\tRESULT\tFIX")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Check, r.Result, cell(r.Message, 0))
	}
	return tw.Flush()
}
