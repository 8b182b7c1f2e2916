// Command jsoncheck reads `winnode-agent info` output on stdin and checks
// that it is one valid Info document (used by hack/wine/test.sh on the
// output of winnode-agent.exe under Wine). Exit status 1 says why not.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/winnode/winnode/internal/plan"
)

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var info plan.Info
	dec := json.NewDecoder(bytesReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		fail("not a valid info document: %v\n%s", err, data)
	}
	if dec.More() {
		fail("more than one JSON document:\n%s", data)
	}
	switch {
	case info.SchemaVersion != plan.SchemaVersion:
		fail("schemaVersion %q, want %q", info.SchemaVersion, plan.SchemaVersion)
	case info.Hostname == "" || info.OS.Build == "" || info.AgentVersion == "":
		fail("hostname, os.build or agentVersion missing:\n%s", data)
	}
	fmt.Printf("winnode-agent.exe info: valid JSON (hostname %s, %s %s, %d IPv4 address(es))\n",
		info.Hostname, info.OS.ProductName, info.OS.Build, len(info.IPv4))
}

func bytesReader(b []byte) io.Reader { return &reader{b: b} }

type reader struct{ b []byte }

func (r *reader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "jsoncheck: "+format+"\n", args...)
	os.Exit(1)
}
