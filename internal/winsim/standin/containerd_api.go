package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/winnode/winnode/internal/simscm"
)

// The simulated containerd serves its "CRI" on its named pipe
// (\\.\pipe\containerd-containerd, a Unix socket on the simulated host:
// simscm.PipePath), as the real one serves gRPC there: the simulated
// kubelet connects to the pipe its runtime endpoint names, and so finds
// out, as the real kubelet does, whether containerd runs. The API is the
// simulation's own (HTTP and JSON), with the two calls the simulation
// needs:
//
//	GET  /runtime           -> containerdRuntime: version, CNI folders, sandbox image
//	POST /pull {"image": R} -> 200, or 500 {"error": containerd's words}

// pullRequest and pullAnswer are /pull's body and failed answer.
type pullRequest struct {
	Image string `json:"image"`
}

type pullAnswer struct {
	Error string `json:"error,omitempty"`
}

// serveContainerd serves the API on the pipe address until ctx ends.
func serveContainerd(ctx context.Context, log *logger, c *containerdSim, address string) error {
	sock, err := simscm.PipePathHere(address)
	if err != nil {
		return err
	}
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("failed to serve on %s: %v", address, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /runtime", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(c.runtime)
	})
	mux.HandleFunc("POST /pull", func(w http.ResponseWriter, r *http.Request) {
		var req pullRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := c.pull(r.Context(), req.Image); err != nil {
			log.Errorf("PullImage %q failed: %v", req.Image, err)
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(pullAnswer{Error: err.Error()})
			return
		}
		log.Infof("PullImage %q returns image reference (simulated: nothing was downloaded)", req.Image)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Infof("serving... address=%s", address)
	err = srv.Serve(ln)
	_ = os.Remove(sock)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// containerdClient is the simulated kubelet's connection to the runtime
// its endpoint names.
type containerdClient struct {
	endpoint string
	http     *http.Client
}

// dialContainerd connects to an npipe:// endpoint
// (npipe://./pipe/containerd-containerd names \\.\pipe\containerd-containerd).
func dialContainerd(endpoint string) (*containerdClient, error) {
	pipe, ok := strings.CutPrefix(endpoint, "npipe://")
	if !ok {
		return nil, fmt.Errorf("invalid container runtime endpoint %q: only npipe:// endpoints are supported on Windows", endpoint)
	}
	pipe = strings.ReplaceAll(pipe, "/", `\`)
	if !strings.HasPrefix(pipe, `\\`) {
		pipe = `\\` + pipe // npipe://./pipe/x is \\.\pipe\x
	}
	sock, err := simscm.PipePathHere(pipe)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	return &containerdClient{endpoint: endpoint, http: &http.Client{Transport: tr}}, nil
}

// runtime asks containerd about itself; an error is what the kubelet says
// when the CRI does not answer.
func (c *containerdClient) runtime(ctx context.Context) (*containerdRuntime, error) {
	var rt containerdRuntime
	if err := c.call(ctx, http.MethodGet, "/runtime", nil, &rt); err != nil {
		return nil, fmt.Errorf("validate service connection: validate CRI v1 runtime API for endpoint %q: rpc error: code = Unavailable desc = connection error: %v", c.endpoint, err)
	}
	return &rt, nil
}

// pull asks containerd to pull an image: nil, or the error the kubelet
// reports ("rpc error: code = Unknown desc = failed to pull and unpack
// image ...").
func (c *containerdClient) pull(ctx context.Context, image string) error {
	b, _ := json.Marshal(pullRequest{Image: image})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://containerd/pull", bytes.NewReader(b))
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("rpc error: code = Unavailable desc = connection error: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var a pullAnswer
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&a)
	return fmt.Errorf("rpc error: code = Unknown desc = %s", a.Error)
}

func (c *containerdClient) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://containerd"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}
