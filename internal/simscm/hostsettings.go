package simscm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// What a simulated host keeps beyond its services, reached through the
// same API: its Windows optional features, its restart, Microsoft Defender
// Antivirus and its exclusions, and the machine's Trusted Root store. On
// Windows the agent reaches each through the API Windows documents for it
// (internal/agent platform_windows_host.go); on a simulated host through
// these routes:
//
//	GET    /v1/features/{name}          -> Feature
//	POST   /v1/features/{name}/enable   -> Feature (EnablePending until the next boot)
//	POST   /v1/reboot          Reboot   -> the host restarts after Reboot.Delay
//	GET    /v1/reboot                   -> RebootState (pending until the host is back)
//	GET    /v1/defender                 -> Defender
//	PUT    /v1/defender/exclusions?path=P   add a process exclusion
//	DELETE /v1/defender/exclusions?path=P   remove it (no error if absent)
//	GET    /v1/certstore/root           -> []RootCertificate
//	POST   /v1/certstore/root  RootCertificate -> AddedCertificate (added: it was not there)
//	DELETE /v1/certstore/root?thumbprint=T  remove it (no error if absent)

// FeatureState is a Windows optional feature's state, as DISM reports it
// (DismPackageFeatureState, reduced to what winnode acts on).
type FeatureState string

const (
	FeatureEnabled       FeatureState = "Enabled"
	FeatureEnablePending FeatureState = "EnablePending" // enabled, Windows restarts to finish
	FeatureDisabled      FeatureState = "Disabled"
)

// Feature is one optional feature of the host.
type Feature struct {
	Name  string       `json:"name"`
	State FeatureState `json:"state"`
}

// Reboot asks the host to restart after Delay (Windows' shutdown timeout).
type Reboot struct {
	Reason string        `json:"reason"`
	Delay  time.Duration `json:"delay"`
}

// RebootState says whether a restart was asked for and has not happened.
type RebootState struct {
	Pending bool `json:"pending"`
}

// Defender is Microsoft Defender Antivirus on the host: whether its
// service runs, and the process exclusions set.
type Defender struct {
	Running    bool     `json:"running"`
	Exclusions []string `json:"exclusions,omitempty"`
}

// RootCertificate is one certificate of LocalMachine\Root: its DER bytes
// and its SHA-1 thumbprint (lower-case hex, as Windows names a store's
// certificates).
type RootCertificate struct {
	DER        []byte `json:"der"`
	Thumbprint string `json:"thumbprint,omitempty"`
}

// AddedCertificate says whether adding put a new certificate in the store.
type AddedCertificate struct {
	Thumbprint string `json:"thumbprint"`
	Added      bool   `json:"added"`
}

// ErrFeatureNotFound: the host has no such optional feature (DISM's
// "Feature name X is unknown", CBS_E_UNKNOWN_UPDATE).
var ErrFeatureNotFound = errors.New("feature name is unknown")

func init() { apiErrors["FeatureNotFound"] = ErrFeatureNotFound }

func (c *Client) Feature(ctx context.Context, name string) (Feature, error) {
	var f Feature
	return f, c.do(ctx, http.MethodGet, "/v1/features/"+url.PathEscape(name), nil, &f)
}

func (c *Client) EnableFeature(ctx context.Context, name string) (Feature, error) {
	var f Feature
	return f, c.do(ctx, http.MethodPost, "/v1/features/"+url.PathEscape(name)+"/enable", nil, &f)
}

func (c *Client) Reboot(ctx context.Context, r Reboot) error {
	return c.do(ctx, http.MethodPost, "/v1/reboot", r, nil)
}

func (c *Client) RebootState(ctx context.Context) (RebootState, error) {
	var r RebootState
	return r, c.do(ctx, http.MethodGet, "/v1/reboot", nil, &r)
}

func (c *Client) Defender(ctx context.Context) (Defender, error) {
	var d Defender
	return d, c.do(ctx, http.MethodGet, "/v1/defender", nil, &d)
}

func (c *Client) AddDefenderExclusion(ctx context.Context, path string) error {
	return c.do(ctx, http.MethodPut, "/v1/defender/exclusions?path="+url.QueryEscape(path), nil, nil)
}

func (c *Client) RemoveDefenderExclusion(ctx context.Context, path string) error {
	return c.do(ctx, http.MethodDelete, "/v1/defender/exclusions?path="+url.QueryEscape(path), nil, nil)
}

func (c *Client) RootCertificates(ctx context.Context) ([]RootCertificate, error) {
	var out []RootCertificate
	return out, c.do(ctx, http.MethodGet, "/v1/certstore/root", nil, &out)
}

func (c *Client) AddRootCertificate(ctx context.Context, der []byte) (AddedCertificate, error) {
	var a AddedCertificate
	return a, c.do(ctx, http.MethodPost, "/v1/certstore/root", RootCertificate{DER: der}, &a)
}

func (c *Client) RemoveRootCertificate(ctx context.Context, thumbprint string) error {
	return c.do(ctx, http.MethodDelete, "/v1/certstore/root?thumbprint="+url.QueryEscape(thumbprint), nil, nil)
}

// PipePath is the Unix socket that stands for the local named pipe
// \\.\pipe\NAME on the simulated host whose service control manager
// listens on socket: beside that socket, named by a hash of the pipe's
// name (case-insensitive, as Windows compares pipe names), short enough
// for a Unix socket's path.
func PipePath(socket, name string) string {
	sum := sha256.Sum256([]byte(lowerASCII(name)))
	return filepath.Join(filepath.Dir(socket), "pipe-"+hex.EncodeToString(sum[:])[:10])
}

// PipePathHere is PipePath for the simulated host this program runs on.
func PipePathHere(name string) (string, error) {
	sock := os.Getenv(EnvSocket)
	if sock == "" {
		return "", errors.New(EnvSocket + " is not set: named pipes are simulated only on a winsim host")
	}
	return PipePath(sock, name), nil
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
