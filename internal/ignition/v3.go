package ignition

import (
	"fmt"
	"strings"

	v3 "github.com/coreos/ignition/v2/config/v3_5"
)

// parseV3 reads spec 3.0–3.5 with Ignition's own parser, which validates the
// whole config and translates older 3.x versions to 3.5's types (the spec
// OpenShift's Machine Config Operator renders since 4.19; earlier releases
// render 3.2–3.4).
func parseV3(data []byte, version string) (*Config, error) {
	cfg, rpt, err := v3.ParseCompatibleVersion(data)
	if err != nil {
		if rpt.IsFatal() {
			return nil, fmt.Errorf("ignition spec %s: %s", version, strings.TrimSpace(rpt.String()))
		}
		return nil, fmt.Errorf("ignition spec %s: %w", version, err)
	}
	c := newConfig(version)
	for i, f := range cfg.Storage.Files {
		field := fmt.Sprintf("storage.files[%d]", i)
		if len(f.Append) > 0 {
			return nil, fmt.Errorf("ignition spec %s: %s.append (file %s): appending is not supported", version, field, f.Path)
		}
		hash := ""
		if f.Contents.Verification.Hash != nil {
			hash = *f.Contents.Verification.Hash
		}
		if err := c.addFile(version, field, f.Path, deref(f.Contents.Source), deref(f.Contents.Compression), hash); err != nil {
			return nil, err
		}
	}
	for _, u := range cfg.Systemd.Units {
		unit := Unit{Name: u.Name, Contents: deref(u.Contents)}
		for _, d := range u.Dropins {
			unit.Dropins = append(unit.Dropins, Dropin{Name: d.Name, Contents: deref(d.Contents)})
		}
		c.Units[u.Name] = unit
	}
	return c, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
