package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// The agent's state file drives deletions (stale services and files, and
// everything on `remove`) by an Administrator, yet it is a file on the host
// that something else may have written or damaged. So it is read as
// strictly as a plan, and a state that fails is not used at all: the agent
// then knows of no earlier plan, so it deletes nothing stale. Validation
// says only that the state is well formed; what it may delete is limited
// further where it deletes (inWinnodeFolders, deleteServices).

// StateInvalidError is a state file that failed validation: Field names
// what is wrong (`applied.services[0].binary`, `manifest`).
type StateInvalidError struct {
	Field, Reason string
}

func (e *StateInvalidError) Error() string {
	return fmt.Sprintf("the agent's state %s is not trusted (%s: %s)", StateDir.Join(stateFile), e.Field, e.Reason)
}

// decodeState parses and validates a state file: a JSON object with no
// unknown field and nothing after it, this agent's schema version, applied
// and pending plans that pass plan.Validate, and a manifest of canonical
// Windows paths to sha256 digests.
func decodeState(data []byte) (*State, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	st := &State{}
	if err := dec.Decode(st); err != nil {
		return nil, &StateInvalidError{Field: "(file)", Reason: fmt.Sprintf("not the agent's JSON: %v", err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &StateInvalidError{Field: "(file)", Reason: "unexpected data after the JSON object"}
	}
	if st.SchemaVersion != plan.SchemaVersion {
		return nil, &StateInvalidError{Field: "schemaVersion", Reason: fmt.Sprintf("%q, this agent reads %q", st.SchemaVersion, plan.SchemaVersion)}
	}
	for i, p := range []*plan.Plan{st.Applied, st.Pending} {
		if p == nil {
			continue
		}
		if err := p.Validate(); err != nil {
			return nil, &StateInvalidError{Field: []string{"applied", "pending"}[i], Reason: err.Error()}
		}
	}
	if st.Manifest == nil {
		st.Manifest = map[string]string{}
	}
	for path, sum := range st.Manifest {
		if wp, err := winpath.Parse(path); err != nil || wp.String() != path {
			return nil, &StateInvalidError{Field: fmt.Sprintf("manifest[%q]", path), Reason: "not a canonical Windows path"}
		}
		if !sha256Hex.MatchString(sum) {
			return nil, &StateInvalidError{Field: fmt.Sprintf("manifest[%q]", path), Reason: "not a lower-case hex sha256"}
		}
	}
	for i, p := range st.DefenderExclusions {
		if wp, err := winpath.Parse(p); err != nil || wp.String() != p {
			return nil, &StateInvalidError{Field: fmt.Sprintf("defenderExclusions[%d]", i), Reason: "not a canonical Windows path"}
		}
	}
	for i, t := range st.RootCertificates {
		if !sha1Hex.MatchString(t) {
			return nil, &StateInvalidError{Field: fmt.Sprintf("rootCertificates[%d]", i), Reason: "not a lower-case hex SHA-1 thumbprint"}
		}
	}
	return st, nil
}

var (
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
	sha1Hex   = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// rejectedStateFile is where apply keeps a state it did not trust, for the
// administrator to look at, before it records a fresh one.
const rejectedStateFile = stateFile + ".rejected"

// untrustedState reports whether err is a state that failed validation,
// and logs it. Apply and info then go on as on a host never configured:
// nothing an earlier plan had is deleted, every plan file is uploaded and
// checked again, and the new plan's apply records a fresh state.
func (a *Agent) untrustedState(err error) (string, bool) {
	var invalid *StateInvalidError
	if !errors.As(err, &invalid) {
		return "", false
	}
	msg := invalid.Error() + ": the agent ignores it and deletes nothing an earlier plan had; " +
		"if nothing on this host should have written it, find out what did"
	a.Log.Warn("ignoring the agent's state", "file", StateDir.Join(stateFile).String(), "field", invalid.Field, "reason", invalid.Reason)
	return msg, true
}

// setAsideState renames an untrusted state file to state.json.rejected
// (replacing an older one), so that the evidence outlives the fresh state.
func (a *Agent) setAsideState() string {
	from, err1 := a.Platform.LocalPath(StateDir.Join(stateFile))
	to, err2 := a.Platform.LocalPath(StateDir.Join(rejectedStateFile))
	if err := errors.Join(err1, err2); err != nil {
		return ""
	}
	if err := os.Rename(from, to); err != nil {
		a.Log.Warn("could not keep the untrusted state aside", "err", err)
		return ""
	}
	return fmt.Sprintf("; it was kept as %s", StateDir.Join(rejectedStateFile))
}

// inWinnodeFolders reports whether a path named by the state may be
// deleted: one of roots or under one (plan.Within). Otherwise it adds a
// warning to res and logs it: the path is left alone.
func (a *Agent) inWinnodeFolders(path string, roots []string, res *plan.Result) bool {
	if plan.Within(path, roots) {
		return true
	}
	a.warn(res, fmt.Sprintf("not deleting %s, named by the agent's state %s: it is outside winnode's folders (%s)",
		path, StateDir.Join(stateFile), strings.Join(roots, ", ")))
	return false
}

// warn records something the agent refused to do, in the result and the log.
func (a *Agent) warn(res *plan.Result, msg string) {
	a.Log.Warn(msg)
	res.Warnings = append(res.Warnings, msg)
}
