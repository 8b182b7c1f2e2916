package cloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"

	"github.com/winnode/winnode/hack/tools/winsimcloud"
)

// Handler serves the cloud's API (hack/tools/winsimcloud's wire.go).
func (c *Cloud) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /instances/{name}", c.handlePut)
	mux.HandleFunc("GET /instances/{name}", c.handleGet)
	mux.HandleFunc("DELETE /instances/{name}", c.handleDelete)
	return mux
}

// Serve serves the API on a free loopback port until the listener is
// closed; it returns the base URL and a function that stops serving.
func (c *Cloud) Serve() (url string, stop func() error, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulated cloud: %w", err)
	}
	srv := &http.Server{Handler: c.Handler()}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), srv.Close, nil
}

// instanceNameRe is what an instance may be named: a Machine's name (a DNS
// subdomain).
var instanceNameRe = regexp.MustCompile(`\A[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?\z`)

// maxUserData is EC2's limit on user data (16 KB before base64).
const maxUserData = 16 << 10

func (c *Cloud) handlePut(w http.ResponseWriter, r *http.Request) {
	name, ok := instanceName(w, r)
	if !ok {
		return
	}
	var req winsimcloud.CreateRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 4*maxUserData))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, fmt.Sprintf("instance %s: the request body is not {\"userData\": base64}: %v", name, err), http.StatusBadRequest)
		return
	}
	if len(req.UserData) > maxUserData {
		http.Error(w, fmt.Sprintf("instance %s: user data of %d bytes is over the limit of %d", name, len(req.UserData), maxUserData), http.StatusBadRequest)
		return
	}
	inst, err := c.Create(name, req.Image, req.UserData)
	switch {
	case errors.Is(err, ErrNoImage):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeInstance(w, inst)
}

func (c *Cloud) handleGet(w http.ResponseWriter, r *http.Request) {
	name, ok := instanceName(w, r)
	if !ok {
		return
	}
	inst, found := c.Get(name)
	if !found {
		http.Error(w, fmt.Sprintf("instance %s does not exist", name), http.StatusNotFound)
		return
	}
	writeInstance(w, inst)
}

func (c *Cloud) handleDelete(w http.ResponseWriter, r *http.Request) {
	name, ok := instanceName(w, r)
	if !ok {
		return
	}
	found, err := c.Delete(name)
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	case !found:
		http.Error(w, fmt.Sprintf("instance %s does not exist", name), http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// instanceName is the request's instance name, or a 400 answer.
func instanceName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if !instanceNameRe.MatchString(name) {
		http.Error(w, fmt.Sprintf("%q is not an instance name (a DNS subdomain)", name), http.StatusBadRequest)
		return "", false
	}
	return name, true
}

func writeInstance(w http.ResponseWriter, inst Instance) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(inst) // a client gone away is its own problem
}
