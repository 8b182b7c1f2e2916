package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/winnode/winnode/internal/winpath"
)

// Decode reads a plan strictly: unknown fields, trailing data, an unknown
// schema version or any invalid entry is an error. Every problem is
// reported, each with the field it is about (`services[1].binary`). Host
// paths come back in canonical Windows form (`C:\k\kubelet.exe`), and empty
// service descriptions are set to ServiceDescription.
func Decode(data []byte) (*Plan, error) {
	var head struct {
		SchemaVersion string `json:"schemaVersion"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("plan: not a JSON object: %w", err)
	}
	if head.SchemaVersion != SchemaVersion && head.SchemaVersion != SchemaVersionEncoded {
		return nil, fmt.Errorf("plan: schemaVersion %q is not supported by this agent (it reads %q and %q): use an agent that matches the operator", head.SchemaVersion, SchemaVersion, SchemaVersionEncoded)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("plan: unexpected data after the plan's JSON object")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks the plan and canonicalizes its paths in place (see
// Decode). The operator calls it on the plans it renders. Every problem is
// reported, in the order of the plan's fields.
func (p *Plan) Validate() error {
	var errs field.ErrorList
	p.validateHeader(&errs)
	dirs := p.validateDirectories(&errs)
	p.validateClusterCredentials(&errs)
	files := p.validateFiles(dirs, &errs)
	known := p.validateServiceNames(&errs)
	for i := range p.Services {
		p.validateService(field.NewPath("services").Index(i), &p.Services[i], files, known, &errs)
	}
	if len(errs) == 0 {
		// Only a plan whose services are otherwise valid has an order.
		if _, err := StartOrder(p.Services); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("services"), "", err.Error()))
		}
	}
	p.validateFirewallPorts(&errs)
	p.validateChecks(known, &errs)
	p.validateHostSettings(files, &errs)
	if len(errs) > 0 {
		return fmt.Errorf("plan %q is invalid: %w", p.Version, errs.ToAggregate())
	}
	return nil
}

// validateHeader checks the schema version, the plan's version and the
// staging folder.
func (p *Plan) validateHeader(errs *field.ErrorList) {
	if p.SchemaVersion != SchemaVersion && p.SchemaVersion != SchemaVersionEncoded {
		*errs = append(*errs, field.NotSupported(field.NewPath("schemaVersion"), p.SchemaVersion, []string{SchemaVersion, SchemaVersionEncoded}))
	}
	if strings.TrimSpace(p.Version) == "" {
		*errs = append(*errs, field.Required(field.NewPath("version"), "name the plan's content, e.g. the operator version"))
	}
	if p.StagingDir != "" {
		p.StagingDir = canonicalPath(field.NewPath("stagingDir"), p.StagingDir, errs)
	}
}

// validateDirectories checks the folders' paths, each listed once, and
// returns them (lower case).
func (p *Plan) validateDirectories(errs *field.ErrorList) map[string]bool {
	dirs := map[string]bool{}
	for i := range p.Directories {
		fp := field.NewPath("directories").Index(i).Child("path")
		d := &p.Directories[i]
		d.Path = canonicalPath(fp, d.Path, errs)
		if key := strings.ToLower(d.Path); dirs[key] {
			*errs = append(*errs, field.Duplicate(fp, d.Path))
		} else {
			dirs[key] = true
		}
	}
	return dirs
}

// validateClusterCredentials checks their paths, and that the plan names
// the cluster they belong to.
func (p *Plan) validateClusterCredentials(errs *field.ErrorList) {
	for i := range p.ClusterCredentials {
		p.ClusterCredentials[i] = canonicalPath(field.NewPath("clusterCredentials").Index(i), p.ClusterCredentials[i], errs)
	}
	if len(p.ClusterCredentials) > 0 && p.Cluster == "" {
		*errs = append(*errs, field.Required(field.NewPath("cluster"), "clusterCredentials need the cluster they belong to"))
	}
}

// validateFiles checks each file's path (listed once, not a folder), hash
// and size, and returns their paths (lower case).
func (p *Plan) validateFiles(dirs map[string]bool, errs *field.ErrorList) map[string]bool {
	files := map[string]bool{}
	for i := range p.Files {
		fp := field.NewPath("files").Index(i)
		f := &p.Files[i]
		f.Path = canonicalPath(fp.Child("path"), f.Path, errs)
		key := strings.ToLower(f.Path)
		if files[key] {
			*errs = append(*errs, field.Duplicate(fp.Child("path"), f.Path))
		}
		if dirs[key] {
			*errs = append(*errs, field.Invalid(fp.Child("path"), f.Path, "is also listed as a directory"))
		}
		files[key] = true
		if !sha256Hex.MatchString(f.SHA256) {
			*errs = append(*errs, field.Invalid(fp.Child("sha256"), f.SHA256, "must be 64 lower-case hex digits"))
		}
		if f.Size < 0 {
			*errs = append(*errs, field.Invalid(fp.Child("size"), f.Size, "must not be negative"))
		}
		p.validateEncoding(fp, f, errs)
	}
	return files
}

// validateEncoding checks a file's encoded blob: none, or zstd with a hash
// and a size, in a plan of SchemaVersionEncoded.
func (p *Plan) validateEncoding(fp *field.Path, f *File, errs *field.ErrorList) {
	if f.Encoding == "" {
		if f.EncodedSHA256 != "" || f.EncodedSize != 0 {
			*errs = append(*errs, field.Required(fp.Child("encoding"), "encodedSHA256 and encodedSize need an encoding"))
		}
		return
	}
	if f.Encoding != EncodingZstd {
		*errs = append(*errs, field.NotSupported(fp.Child("encoding"), f.Encoding, []string{EncodingZstd}))
	}
	if p.SchemaVersion != SchemaVersionEncoded {
		*errs = append(*errs, field.Invalid(fp.Child("encoding"), f.Encoding, fmt.Sprintf("needs schemaVersion %q", SchemaVersionEncoded)))
	}
	if !sha256Hex.MatchString(f.EncodedSHA256) {
		*errs = append(*errs, field.Invalid(fp.Child("encodedSHA256"), f.EncodedSHA256, "must be 64 lower-case hex digits"))
	}
	if f.EncodedSize < 0 {
		*errs = append(*errs, field.Invalid(fp.Child("encodedSize"), f.EncodedSize, "must not be negative"))
	}
}

// validateServiceNames checks the names of the host's services and the
// plan's, each named once among both, and returns them (lower case): every
// name a dependency or a check may name.
func (p *Plan) validateServiceNames(errs *field.ErrorList) map[string]bool {
	known := map[string]bool{}
	for i, name := range p.HostServices {
		fp := field.NewPath("hostServices").Index(i)
		validServiceName(fp, name, errs)
		if known[strings.ToLower(name)] {
			*errs = append(*errs, field.Duplicate(fp, name))
		}
		known[strings.ToLower(name)] = true
	}
	for i, s := range p.Services {
		fp := field.NewPath("services").Index(i).Child("name")
		validServiceName(fp, s.Name, errs)
		if known[strings.ToLower(s.Name)] {
			*errs = append(*errs, field.Duplicate(fp, s.Name))
		}
		known[strings.ToLower(s.Name)] = true
	}
	return known
}

// validateFirewallPorts checks each port's name (unique), protocol and
// number.
func (p *Plan) validateFirewallPorts(errs *field.ErrorList) {
	fwNames := map[string]bool{}
	for i, fw := range p.FirewallPorts {
		fp := field.NewPath("firewallPorts").Index(i)
		if !firewallName.MatchString(fw.Name) {
			*errs = append(*errs, field.Invalid(fp.Child("name"), fw.Name, "must be 1-40 characters of a-z, 0-9 and '-'"))
		} else if fwNames[fw.Name] {
			*errs = append(*errs, field.Duplicate(fp.Child("name"), fw.Name))
		}
		fwNames[fw.Name] = true
		if fw.Protocol != TCP && fw.Protocol != UDP {
			*errs = append(*errs, field.NotSupported(fp.Child("protocol"), fw.Protocol, []Protocol{TCP, UDP}))
		}
		if fw.Port < 1 || fw.Port > 65535 {
			*errs = append(*errs, field.Invalid(fp.Child("port"), fw.Port, "must be 1-65535"))
		}
	}
}

// validateChecks checks each check's type and what it names: a known
// service, or a file path.
func (p *Plan) validateChecks(known map[string]bool, errs *field.ErrorList) {
	for i := range p.Checks {
		fp := field.NewPath("checks").Index(i)
		c := &p.Checks[i]
		switch c.Type {
		case CheckServiceRunning:
			if !known[strings.ToLower(c.Service)] {
				*errs = append(*errs, field.NotFound(fp.Child("service"), c.Service))
			}
		case CheckFileExists:
			c.Path = canonicalPath(fp.Child("path"), c.Path, errs)
		default:
			*errs = append(*errs, field.NotSupported(fp.Child("type"), c.Type, []CheckType{CheckServiceRunning, CheckFileExists}))
		}
	}
}

// validateService checks one service and canonicalizes its paths; files
// and known are the plan's files and service names (lower case).
func (p *Plan) validateService(fp *field.Path, s *Service, files, known map[string]bool, errs *field.ErrorList) {
	if s.Description == "" {
		s.Description = ServiceDescription
	} else if s.Description != ServiceDescription {
		*errs = append(*errs, field.Invalid(fp.Child("description"), s.Description, fmt.Sprintf("must be %q (or empty)", ServiceDescription)))
	}
	if strings.ContainsRune(s.DisplayName, 0) {
		*errs = append(*errs, field.Invalid(fp.Child("displayName"), s.DisplayName, "contains a NUL byte"))
	}
	s.Binary = canonicalPath(fp.Child("binary"), s.Binary, errs)
	if s.Binary != "" && !files[strings.ToLower(s.Binary)] {
		*errs = append(*errs, field.Invalid(fp.Child("binary"), s.Binary, "must be one of the plan's files, so that its hash is verified before it runs"))
	}
	for j, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			*errs = append(*errs, field.Invalid(fp.Child("args").Index(j), a, "contains a NUL byte"))
		}
	}
	for j := range s.Uses {
		s.Uses[j] = canonicalPath(fp.Child("uses").Index(j), s.Uses[j], errs)
		if s.Uses[j] != "" && !files[strings.ToLower(s.Uses[j])] {
			*errs = append(*errs, field.NotFound(fp.Child("uses").Index(j), s.Uses[j]))
		}
	}
	for j, d := range s.Dependencies {
		switch {
		case strings.EqualFold(d, s.Name):
			*errs = append(*errs, field.Invalid(fp.Child("dependencies").Index(j), d, "a service cannot depend on itself"))
		case !known[strings.ToLower(d)]:
			*errs = append(*errs, field.NotFound(fp.Child("dependencies").Index(j), d))
		}
	}
	switch s.StartType {
	case StartAuto, StartManual, StartDisabled:
	default:
		*errs = append(*errs, field.NotSupported(fp.Child("startType"), s.StartType, []StartType{StartAuto, StartManual, StartDisabled}))
	}
	for j, a := range s.Recovery.Actions {
		ap := fp.Child("recovery", "actions").Index(j)
		if a.Type != RecoveryRestart && a.Type != RecoveryNone {
			*errs = append(*errs, field.NotSupported(ap.Child("type"), a.Type, []RecoveryActionType{RecoveryRestart, RecoveryNone}))
		}
		if a.Delay.Duration < 0 {
			*errs = append(*errs, field.Invalid(ap.Child("delay"), a.Delay.Duration.String(), "must not be negative"))
		}
	}
	if s.Recovery.ResetPeriod.Duration < 0 {
		*errs = append(*errs, field.Invalid(fp.Child("recovery", "resetPeriod"), s.Recovery.ResetPeriod.Duration.String(), "must not be negative"))
	}
	for k, v := range s.Environment {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			*errs = append(*errs, field.Invalid(fp.Child("environment").Key(k), "(value not shown)", "names must be non-empty without '='; no NUL bytes"))
		}
	}
	if s.ReadyPipe != "" && !pipeName.MatchString(s.ReadyPipe) {
		*errs = append(*errs, field.Invalid(fp.Child("readyPipe"), s.ReadyPipe, `must be a local named pipe, \\.\pipe\NAME`))
	}
	for j := range s.Writes {
		s.Writes[j] = canonicalPath(fp.Child("writes").Index(j), s.Writes[j], errs)
		if files[strings.ToLower(s.Writes[j])] {
			*errs = append(*errs, field.Invalid(fp.Child("writes").Index(j), s.Writes[j], "is a plan file: the plan writes it, not the service"))
		}
	}
	own := map[string]bool{}
	for _, f := range s.Files() {
		own[strings.ToLower(f)] = true
	}
	for j := range s.Rollback {
		s.Rollback[j] = canonicalPath(fp.Child("rollback").Index(j), s.Rollback[j], errs)
		if s.Rollback[j] != "" && !own[strings.ToLower(s.Rollback[j])] {
			*errs = append(*errs, field.Invalid(fp.Child("rollback").Index(j), s.Rollback[j], "must be the service's binary or one of its uses"))
		}
	}
}

// validateHostSettings checks the Windows features the plan needs, and the
// Defender exclusions and root certificates it names: each a plan file, so
// that a plan excludes from scanning, and trusts, only what it installs
// with a verified hash.
func (p *Plan) validateHostSettings(files map[string]bool, errs *field.ErrorList) {
	for i, name := range p.WindowsFeatures {
		if !featureName.MatchString(name) {
			*errs = append(*errs, field.Invalid(field.NewPath("windowsFeatures").Index(i), name, "a Windows feature name is letters, digits, '.', '-' and '_'"))
		}
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"defenderExclusions", p.DefenderExclusions}, {"rootCertificates", p.RootCertificates}} {
		for i := range list.paths {
			fp := field.NewPath(list.name).Index(i)
			list.paths[i] = canonicalPath(fp, list.paths[i], errs)
			if list.paths[i] != "" && !files[strings.ToLower(list.paths[i])] {
				*errs = append(*errs, field.Invalid(fp, list.paths[i], "must be one of the plan's files"))
			}
		}
	}
}

var (
	sha256Hex    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	firewallName = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)
	featureName  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
	pipeName     = regexp.MustCompile(`^\\\\\.\\pipe\\[A-Za-z0-9._-]{1,200}$`)
)

// canonicalPath parses a host path, records why it is unacceptable, and
// returns its canonical form (or "" when it is unusable). Drive roots and
// the Windows folder are refused: `remove` deletes what the plan names.
func canonicalPath(fp *field.Path, p string, errs *field.ErrorList) string {
	parsed, err := winpath.Parse(p)
	if err != nil {
		*errs = append(*errs, field.Invalid(fp, p, err.Error()))
		return ""
	}
	if len(parsed.Parts) == 0 {
		*errs = append(*errs, field.Invalid(fp, p, "a drive root cannot be a plan path"))
		return ""
	}
	if strings.EqualFold(parsed.Parts[0], "Windows") {
		*errs = append(*errs, field.Invalid(fp, p, `paths under C:\Windows are not winnode's to manage`))
		return ""
	}
	return parsed.String()
}

// validServiceName follows the SCM's limits: at most 256 characters, no
// slashes.
func validServiceName(fp *field.Path, name string, errs *field.ErrorList) {
	if name == "" || len(name) > 256 || strings.ContainsAny(name, "/\\\x00") || strings.TrimSpace(name) != name {
		*errs = append(*errs, field.Invalid(fp, name, "a service name is 1-256 characters, without slashes or surrounding spaces"))
	}
}
