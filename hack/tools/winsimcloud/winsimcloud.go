// Package winsimcloud is the simulated cloud's HTTP API (wire.go: its
// types, which internal/winsim/cloud in the winnode module serves) and a
// client of it: create, get and delete instances by name. The test world's
// Machine API program (hack/tools/openshift/machineapi) and Cluster API
// program (hack/tools/capi/capiworld) drive their instances with it. It is
// a module of its own, on the standard library alone, so that both programs'
// modules and the winnode module can require it whatever Kubernetes release
// each pins; it requires none of them.
package winsimcloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrNoInstance is the cloud's 404: no instance of that name (never created,
// or powered off and gone).
var ErrNoInstance = errors.New("no such instance")

// Client is a client of the simulated cloud's HTTP API.
type Client struct {
	base string
	http *http.Client
}

// New returns a client of the simulated cloud at base
// (http://127.0.0.1:PORT).
func New(base string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cloud URL %q is not an http(s) URL", base)
	}
	// A bound on every call, so that a hung cloud fails a reconcile (which is
	// then retried) instead of blocking a controller worker for ever.
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// Create creates the instance name that boots the cloud's plain Windows
// Server image with userData (CreateFrom with no image).
func (c *Client) Create(ctx context.Context, name string, userData []byte) (*Instance, error) {
	return c.CreateFrom(ctx, name, "", userData)
}

// CreateFrom creates the instance name that boots from image with
// userData. The cloud returns an existing instance of that name as it is,
// so a repeated call (after a crash between the call and the Machine's
// update) creates nothing.
func (c *Client) CreateFrom(ctx context.Context, name, image string, userData []byte) (*Instance, error) {
	body, err := json.Marshal(CreateRequest{UserData: userData, Image: image})
	if err != nil {
		return nil, err
	}
	return c.do(ctx, http.MethodPut, name, body)
}

// Get returns the instance name, or ErrNoInstance.
func (c *Client) Get(ctx context.Context, name string) (*Instance, error) {
	return c.do(ctx, http.MethodGet, name, nil)
}

// Delete powers off and removes the instance name; the cloud answers once it
// is gone. One that does not exist is gone already: no error.
func (c *Client) Delete(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, name, nil)
	if errors.Is(err, ErrNoInstance) {
		return nil
	}
	return err
}

// do sends one request about instance name and decodes the Instance of a 2xx
// answer; a 404 is ErrNoInstance, any other status an error with the cloud's
// text.
func (c *Client) do(ctx context.Context, method, name string, body []byte) (*Instance, error) {
	target := c.base + "/instances/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("simulated cloud: %s %s: %w", method, target, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("simulated cloud: %s %s: reading the answer: %w", method, target, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("simulated cloud: %s %s: %w", method, target, ErrNoInstance)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, fmt.Errorf("simulated cloud: %s %s: %s: %s", method, target, resp.Status, strings.TrimSpace(string(data)))
	}
	if method == http.MethodDelete {
		return nil, nil
	}
	var inst Instance
	if err := json.Unmarshal(data, &inst); err != nil {
		return nil, fmt.Errorf("simulated cloud: %s %s: the answer is not an instance: %w", method, target, err)
	}
	return &inst, nil
}
