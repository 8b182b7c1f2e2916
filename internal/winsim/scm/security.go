package scm

import (
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/winnode/winnode/internal/simscm"
)

// serveSecurity answers GET and PUT /v1/security?path=: the owner and DACL
// of a path on the simulated host, what GetNamedSecurityInfo and
// SetNamedSecurityInfo do on Windows. The agent's simulated platform calls
// it as SYSTEM (which may read and change any descriptor), so no access
// check is made here.
func (m *Manager) serveSecurity(mux *http.ServeMux) {
	st := m.opts.Security
	if st == nil {
		return
	}
	mux.HandleFunc("GET /v1/security", func(w http.ResponseWriter, r *http.Request) {
		owner, dacl, err := st.Get(r.URL.Query().Get("path"))
		if errors.Is(err, os.ErrNotExist) {
			writeError(w, fmt.Errorf("%w: %s", simscm.ErrFileNotFound, r.URL.Query().Get("path")))
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, simscm.Security{Owner: owner, DACL: dacl})
	})
	mux.HandleFunc("PUT /v1/security", func(w http.ResponseWriter, r *http.Request) {
		var sec simscm.Security
		if !readJSON(w, r, &sec) {
			return
		}
		path := r.URL.Query().Get("path")
		if err := st.Set(path, sec.Owner, sec.DACL); err != nil {
			writeError(w, fmt.Errorf("%w: %s: %v", simscm.ErrInvalid, path, err))
			return
		}
		m.log.Info("simulated: security descriptor set", "path", path, "owner", sec.Owner, "dacl", sec.DACL)
		writeJSON(w, http.StatusOK, struct{}{})
	})
}
