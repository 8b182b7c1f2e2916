package cli

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// outputFormat is the value of --output: table (for people) or json (for
// scripts).
type outputFormat string

const (
	outputTable outputFormat = "table"
	outputJSON  outputFormat = "json"
)

// String, Set and Type make outputFormat a pflag.Value, so a wrong value is
// a flag error (exit code 2) before anything runs.
func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "table|json" }
func (o *outputFormat) Set(v string) error {
	switch f := outputFormat(strings.ToLower(v)); f {
	case outputTable, outputJSON:
		*o = f
		return nil
	}
	return errInvalidOutput(v)
}

type errInvalidOutput string

func (e errInvalidOutput) Error() string {
	return "unknown output format " + string(e) + ": use table or json"
}

// addOutputFlag adds --output/-o, default table.
func addOutputFlag(fs *pflag.FlagSet, o *outputFormat) {
	*o = outputTable
	fs.VarP(o, "output", "o", "output format: table or json")
}

// writeJSON writes v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
