package ignition

import (
	"encoding/json"
	"fmt"
)

// v2Config is the part of an Ignition 2.2–2.4 config the agent reads. It is
// written here rather than taken from github.com/coreos/ignition v0.35
// (see the package comment): storage.files and systemd.units have the same
// shape in 2.2, 2.3 and 2.4.
type v2Config struct {
	Storage struct {
		Files []struct {
			Filesystem string     `json:"filesystem"`
			Path       string     `json:"path"`
			Contents   v2Contents `json:"contents"`
			Append     bool       `json:"append"`
		} `json:"files"`
	} `json:"storage"`
	Systemd struct {
		Units []struct {
			Name     string `json:"name"`
			Contents string `json:"contents"`
			Dropins  []struct {
				Name     string `json:"name"`
				Contents string `json:"contents"`
			} `json:"dropins"`
		} `json:"units"`
	} `json:"systemd"`
}

type v2Contents struct {
	Source       string `json:"source"`
	Compression  string `json:"compression"`
	Verification struct {
		Hash *string `json:"hash"`
	} `json:"verification"`
}

func parseV2(data []byte, version string) (*Config, error) {
	var raw v2Config
	if err := json.Unmarshal(data, &raw); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return nil, fmt.Errorf("ignition spec %s: field %s: %v", version, te.Field, err)
		}
		return nil, fmt.Errorf("ignition spec %s: %w", version, err)
	}
	c := newConfig(version)
	for i, f := range raw.Storage.Files {
		field := fmt.Sprintf("storage.files[%d]", i)
		if f.Filesystem != "root" {
			return nil, fmt.Errorf("ignition spec %s: %s.filesystem %q (file %s): only the root filesystem is supported", version, field, f.Filesystem, f.Path)
		}
		if f.Append {
			return nil, fmt.Errorf("ignition spec %s: %s.append (file %s): appending is not supported", version, field, f.Path)
		}
		hash := ""
		if f.Contents.Verification.Hash != nil {
			hash = *f.Contents.Verification.Hash
		}
		if err := c.addFile(version, field, f.Path, f.Contents.Source, f.Contents.Compression, hash); err != nil {
			return nil, err
		}
	}
	for i, u := range raw.Systemd.Units {
		if u.Name == "" {
			return nil, fmt.Errorf("ignition spec %s: systemd.units[%d].name is empty", version, i)
		}
		unit := Unit{Name: u.Name, Contents: u.Contents}
		for _, d := range u.Dropins {
			unit.Dropins = append(unit.Dropins, Dropin{Name: d.Name, Contents: d.Contents})
		}
		c.Units[u.Name] = unit
	}
	return c, nil
}
