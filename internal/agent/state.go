package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// StateDir is where the agent keeps what it installed:
// C:\ProgramData\winnode\state.json. `remove` deletes it.
var StateDir = winpath.Path{Drive: "C", Parts: []string{"ProgramData", "winnode"}}

const stateFile = "state.json"

// State is the agent's record of the host, written atomically after every
// step that changes what is installed.
type State struct {
	SchemaVersion string `json:"schemaVersion"`
	// Applied is the last plan applied completely.
	Applied *plan.Plan `json:"applied,omitempty"`
	// Pending is a plan whose apply started and did not finish: its
	// services and files count as managed until an apply or remove ends.
	Pending *plan.Plan `json:"pending,omitempty"`
	// Manifest maps installed files' Windows paths to their sha256; an
	// entry exists only for a file verified in place.
	Manifest map[string]string `json:"manifest"`
	// DefenderExclusions are the Defender process exclusions the agent
	// added (apply_defender.go): only these are ever removed.
	DefenderExclusions []string `json:"defenderExclusions,omitempty"`
	// RootCertificates are the SHA-1 thumbprints of the certificates the
	// agent added to LocalMachine\Root (apply_trust.go): only these are
	// ever removed.
	RootCertificates []string `json:"rootCertificates,omitempty"`
}

// plans returns the plans whose services and files the agent manages.
func (s *State) plans() []*plan.Plan {
	var out []*plan.Plan
	for _, p := range []*plan.Plan{s.Applied, s.Pending} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// installedPlan is what Info reports.
func (s *State) installedPlan() *plan.InstalledPlan {
	switch {
	case s.Pending != nil:
		return &plan.InstalledPlan{Version: s.Pending.Version, Files: s.Manifest, Complete: false}
	case s.Applied != nil:
		return &plan.InstalledPlan{Version: s.Applied.Version, Files: s.Manifest, Complete: true,
			Services: s.Applied.Services, Cluster: s.Applied.Cluster}
	}
	return nil
}

func (a *Agent) statePath() (string, error) {
	return a.Platform.LocalPath(StateDir.Join(stateFile))
}

// loadState reads the state; a host never configured has an empty one. A
// state that fails validation (decodeState) comes back as an empty state
// and a *StateInvalidError: the agent deletes nothing on its word. Each
// command decides what that means (see untrustedState).
func (a *Agent) loadState() (*State, error) {
	path, err := a.statePath()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return emptyState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the agent's state %s: %w", StateDir.Join(stateFile), err)
	}
	st, err := decodeState(data)
	if err != nil {
		return emptyState(), err
	}
	return st, nil
}

func emptyState() *State {
	return &State{SchemaVersion: plan.SchemaVersion, Manifest: map[string]string{}}
}

func (a *Agent) saveState(st *State) error {
	path, err := a.statePath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("saving the agent's state: %w", err)
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, data); err != nil {
		return fmt.Errorf("saving the agent's state: %w", err)
	}
	return nil
}

// writeFileAtomic writes through a temporary file and a rename, so a crash
// leaves the old content or the new, never half.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func lower(s string) string { return strings.ToLower(s) }
