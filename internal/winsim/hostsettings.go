package winsim

import (
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/winnode/winnode/internal/simscm"
)

// settings is what a simulated host keeps beyond its services and files
// (StateDir/settings.json), served by the routes of simscm's
// hostsettings.go: its optional features, Microsoft Defender Antivirus and
// its process exclusions, and the machine's Trusted Root store.
type settings struct {
	mu   sync.Mutex
	file string
	// Features by name, as DISM names them ("Containers").
	Features map[string]simscm.FeatureState `json:"features"`
	// Defender says whether the WinDefend service runs; Exclusions are
	// the process exclusions set (the Group Policy values of
	// HKLM\SOFTWARE\Policies\Microsoft\Windows Defender\Exclusions\Processes).
	Defender   bool     `json:"defender"`
	Exclusions []string `json:"exclusions,omitempty"`
	// Root is LocalMachine\Root: DER by SHA-1 thumbprint.
	Root map[string][]byte `json:"root"`
	// rebootPending: a restart was asked for and has not happened (what
	// Windows forgets at a restart, as a volatile registry key).
	rebootPending bool
	// System is what the pre-flight checks read (preflight.go).
	System system `json:"system"`
}

// loadSettings reads settings.json, or makes the settings of a new host:
// the Containers feature enabled unless opts say it is missing, Defender
// running when opts say so.
func loadSettings(stateDir string, opts Options, build string) (*settings, error) {
	s := &settings{file: filepath.Join(stateDir, "settings.json")}
	data, err := os.ReadFile(s.file)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, s); err != nil {
			return nil, fmt.Errorf("simulated host: %s is damaged (%v); delete it to start with a new host's settings", s.file, err)
		}
	case errors.Is(err, os.ErrNotExist):
		state := simscm.FeatureEnabled
		if opts.WithoutContainersFeature {
			state = simscm.FeatureDisabled
		}
		s.Features = map[string]simscm.FeatureState{"Containers": state}
		s.Defender = opts.Defender
	default:
		return nil, fmt.Errorf("simulated host: reading %s: %w", s.file, err)
	}
	if s.Root == nil {
		s.Root = map[string][]byte{}
	}
	s.applySystemOptions(opts, build)
	return s, s.save()
}

// save writes the settings; callers hold mu (or own s alone).
func (s *settings) save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.file, data, 0o644)
}

// boot finishes what waited for a restart: an enabled feature is enabled
// once Windows has booted again.
func (s *settings) boot() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rebootPending = false
	s.System.PendingReboot = false // Windows finished what waited for the restart
	for name, st := range s.Features {
		if st == simscm.FeatureEnablePending {
			s.Features[name] = simscm.FeatureEnabled
		}
	}
	_ = s.save()
}

// feature reports one feature, matched case-insensitively as DISM does.
func (s *settings) feature(name string) (string, simscm.FeatureState, bool) {
	for n, st := range s.Features {
		if strings.EqualFold(n, name) {
			return n, st, true
		}
	}
	return "", "", false
}

// serveSettings adds the settings' routes to the host's API.
func (h *Host) serveSettings(mux *http.ServeMux) {
	s := h.settings
	mux.HandleFunc("GET /v1/features/{name}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		name, st, ok := s.feature(r.PathValue("name"))
		if !ok {
			apiError(w, fmt.Errorf("%w: %s", simscm.ErrFeatureNotFound, r.PathValue("name")))
			return
		}
		apiJSON(w, simscm.Feature{Name: name, State: st})
	})
	mux.HandleFunc("POST /v1/features/{name}/enable", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		name, st, ok := s.feature(r.PathValue("name"))
		if !ok {
			apiError(w, fmt.Errorf("%w: %s", simscm.ErrFeatureNotFound, r.PathValue("name")))
			return
		}
		if st == simscm.FeatureDisabled {
			// Enabling Containers needs a restart to finish (DISM's
			// ERROR_SUCCESS_REBOOT_REQUIRED, 3010).
			st = simscm.FeatureEnablePending
			s.Features[name] = st
			h.log.Info("simulated: Windows feature enabled; a restart finishes it", "feature", name)
		}
		apiJSON(w, simscm.Feature{Name: name, State: st}, s.save())
	})
	mux.HandleFunc("POST /v1/reboot", func(w http.ResponseWriter, r *http.Request) {
		var rb simscm.Reboot
		if err := json.NewDecoder(r.Body).Decode(&rb); err != nil {
			apiError(w, fmt.Errorf("%w: %v", simscm.ErrInvalid, err))
			return
		}
		h.log.Info("simulated: restart requested (InitiateSystemShutdownEx)", "reason", rb.Reason, "in", rb.Delay)
		s.mu.Lock()
		s.rebootPending = true
		s.mu.Unlock()
		time.AfterFunc(rb.Delay, func() {
			if err := h.Reboot(); err != nil {
				h.log.Warn("simulated: requested restart failed", "err", err)
			}
		})
		apiJSON(w, struct{}{})
	})
	mux.HandleFunc("GET /v1/reboot", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		apiJSON(w, simscm.RebootState{Pending: s.rebootPending})
	})
	h.serveDefender(mux)
	h.serveRootStore(mux)
}

// serveDefender answers Defender's state and its process exclusions.
func (h *Host) serveDefender(mux *http.ServeMux) {
	s := h.settings
	mux.HandleFunc("GET /v1/defender", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		apiJSON(w, simscm.Defender{Running: s.Defender, Exclusions: slices.Clone(s.Exclusions)})
	})
	mux.HandleFunc("PUT /v1/defender/exclusions", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		p := r.URL.Query().Get("path")
		if !slices.ContainsFunc(s.Exclusions, func(e string) bool { return strings.EqualFold(e, p) }) {
			s.Exclusions = append(s.Exclusions, p)
			sort.Strings(s.Exclusions)
			h.log.Info("simulated: Defender process exclusion added", "path", p)
		}
		apiJSON(w, struct{}{}, s.save())
	})
	mux.HandleFunc("DELETE /v1/defender/exclusions", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		p := r.URL.Query().Get("path")
		s.Exclusions = slices.DeleteFunc(s.Exclusions, func(e string) bool { return strings.EqualFold(e, p) })
		apiJSON(w, struct{}{}, s.save())
	})
}

// serveRootStore answers LocalMachine\Root: list, add (a certificate that
// parses; adding one already there changes nothing) and remove by
// thumbprint.
func (h *Host) serveRootStore(mux *http.ServeMux) {
	s := h.settings
	mux.HandleFunc("GET /v1/certstore/root", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := []simscm.RootCertificate{}
		for t, der := range s.Root {
			out = append(out, simscm.RootCertificate{DER: der, Thumbprint: t})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Thumbprint < out[j].Thumbprint })
		apiJSON(w, out)
	})
	mux.HandleFunc("POST /v1/certstore/root", func(w http.ResponseWriter, r *http.Request) {
		var c simscm.RootCertificate
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			apiError(w, fmt.Errorf("%w: %v", simscm.ErrInvalid, err))
			return
		}
		if _, err := x509.ParseCertificate(c.DER); err != nil {
			// CertAddEncodedCertificateToStore: CRYPT_E_ASN1_BADTAG and the like.
			apiError(w, fmt.Errorf("%w: not a certificate: %v", simscm.ErrInvalid, err))
			return
		}
		sum := sha1.Sum(c.DER)
		t := hex.EncodeToString(sum[:])
		s.mu.Lock()
		defer s.mu.Unlock()
		_, had := s.Root[t]
		s.Root[t] = c.DER
		if !had {
			h.log.Info("simulated: certificate added to LocalMachine\\Root", "thumbprint", t)
		}
		apiJSON(w, simscm.AddedCertificate{Thumbprint: t, Added: !had}, s.save())
	})
	mux.HandleFunc("DELETE /v1/certstore/root", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		t := strings.ToLower(r.URL.Query().Get("thumbprint"))
		if _, ok := s.Root[t]; ok {
			delete(s.Root, t)
			h.log.Info("simulated: certificate removed from LocalMachine\\Root", "thumbprint", t)
		}
		apiJSON(w, struct{}{}, s.save())
	})
}

// RootCertificates are the thumbprints in the host's LocalMachine\Root.
func (h *Host) RootCertificates() []string {
	h.settings.mu.Lock()
	defer h.settings.mu.Unlock()
	out := make([]string, 0, len(h.settings.Root))
	for t := range h.settings.Root {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// DefenderExclusions are the Defender process exclusions set on the host.
func (h *Host) DefenderExclusions() []string {
	h.settings.mu.Lock()
	defer h.settings.mu.Unlock()
	return slices.Clone(h.settings.Exclusions)
}

// Feature is the state of one of the host's Windows features.
func (h *Host) Feature(name string) simscm.FeatureState {
	h.settings.mu.Lock()
	defer h.settings.mu.Unlock()
	_, st, _ := h.settings.feature(name)
	return st
}

// apiJSON answers v, or the first error of errs.
func apiJSON(w http.ResponseWriter, v any, errs ...error) {
	if err := errors.Join(errs...); err != nil {
		apiError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, err error) {
	status, body := simscm.EncodeError(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
