package scm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"golang.org/x/sys/unix"

	"github.com/winnode/winnode/internal/simscm"
)

// Serve answers the API of package simscm (see the routes above
// simscm.Client.Host)
// on ln until ln is closed. info says what the host reports about itself.
func (m *Manager) Serve(ln net.Listener, info func() simscm.HostInfo) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/host", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, info())
	})
	mux.HandleFunc("GET /v1/services", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, m.List())
	})
	mux.HandleFunc("POST /v1/services", func(w http.ResponseWriter, r *http.Request) {
		var c simscm.Config
		if !readJSON(w, r, &c) {
			return
		}
		reply(w, m.Create(c))
	})
	mux.HandleFunc("GET /v1/services/{name}", func(w http.ResponseWriter, r *http.Request) {
		s, err := m.Get(r.PathValue("name"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, s)
	})
	mux.HandleFunc("PUT /v1/services/{name}", func(w http.ResponseWriter, r *http.Request) {
		var c simscm.Config
		if !readJSON(w, r, &c) {
			return
		}
		if c.Name == "" {
			c.Name = r.PathValue("name")
		}
		if c.Name != r.PathValue("name") {
			writeError(w, fmt.Errorf("%w: the body names service %q, the path %q", simscm.ErrInvalid, c.Name, r.PathValue("name")))
			return
		}
		reply(w, m.Update(c))
	})
	mux.HandleFunc("DELETE /v1/services/{name}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, m.Delete(r.PathValue("name")))
	})
	mux.HandleFunc("POST /v1/services/{name}/start", func(w http.ResponseWriter, r *http.Request) {
		reply(w, m.Start(r.PathValue("name")))
	})
	mux.HandleFunc("POST /v1/services/{name}/stop", func(w http.ResponseWriter, r *http.Request) {
		reply(w, m.Stop(r.Context(), r.PathValue("name")))
	})
	mux.HandleFunc("POST /v1/dispatcher", func(w http.ResponseWriter, r *http.Request) {
		pid, ok := r.Context().Value(peerPID{}).(int)
		if !ok {
			writeError(w, fmt.Errorf("%w: the caller's process is unknown", simscm.ErrControllerConnect))
			return
		}
		reply(w, m.Dispatcher(pid))
	})
	m.serveSecurity(mux)
	if m.opts.Routes != nil {
		m.opts.Routes(mux)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnContext: withPeerPID}
	err := srv.Serve(ln)
	_ = srv.Close()
	if errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// peerPID is the context key of the PID of the process at the other end of
// an API connection.
type peerPID struct{}

// withPeerPID records the connecting process's PID (SO_PEERCRED of the Unix
// socket): the SCM knows which process answers it, as Windows knows the
// process it created for a service.
func withPeerPID(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return ctx
	}
	return context.WithValue(ctx, peerPID{}, int(cred.Pid))
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		writeError(w, fmt.Errorf("%w: request body: %v", simscm.ErrInvalid, err))
		return false
	}
	return true
}

func reply(w http.ResponseWriter, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func writeError(w http.ResponseWriter, err error) {
	status, body := simscm.EncodeError(err)
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
