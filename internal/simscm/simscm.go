// Package simscm is the contract between a program running on a winsim
// simulated Windows host and that host's simulated service control manager:
// the environment variables that tell the program it runs there, the types
// of the small local API (HTTP + JSON over a Unix socket), its errors and
// their wire codes, and the client.
//
// It holds no simulator: the server is internal/winsim/scm, which answers
// this API, and the agent's simulated platform is a client of it. Keeping
// the contract here lets the agent reach a simulated host without linking
// the simulator, and gives both sides one definition of every name. The
// types mirror what Windows' SCM knows about a service
// (golang.org/x/sys/windows/svc/mgr.Config), with the plan's StartType and
// RecoveryActionType, so the agent maps them one to one.
package simscm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/winnode/winnode/internal/plan"
)

// EnvSocket names the environment variable that tells a program running on a
// simulated host where its host's service control manager listens. EnvRoot
// names the Linux folder that the simulated host's C:\ maps to. A program
// sees both only when it runs on a simulated host; the simulator sets them
// on every program it starts (SSH exec and services).
const (
	EnvSocket = "WINSIM_SCM"
	EnvRoot   = "WINSIM_ROOT"
)

// State is a service's current state, as Windows names them.
type State string

const (
	Stopped      State = "Stopped"
	StartPending State = "StartPending"
	Running      State = "Running"
	StopPending  State = "StopPending"
)

// Action is one recovery action: what the SCM does after the service's
// Nth failure (the Nth entry; the last entry repeats).
type Action struct {
	Type  plan.RecoveryActionType `json:"type"` // "restart" or "none"
	Delay time.Duration           `json:"delay"`
}

// Config is a service's configuration.
type Config struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	Description string `json:"description,omitempty"`
	// BinaryPathName is the full command line, quoted by the rules of the
	// Windows command line, exactly as Windows stores it.
	BinaryPathName string         `json:"binaryPathName"`
	Dependencies   []string       `json:"dependencies,omitempty"`
	StartType      plan.StartType `json:"startType"`
	// Environment is the service's extra environment, "NAME=value" each
	// (HKLM\SYSTEM\CurrentControlSet\Services\<name>\Environment on Windows).
	Environment []string `json:"environment,omitempty"`
	// RecoveryActions and ResetPeriod: failure count resets after ResetPeriod
	// without a failure.
	RecoveryActions []Action      `json:"recoveryActions,omitempty"`
	ResetPeriod     time.Duration `json:"resetPeriod,omitempty"`
}

// Status is a service's current state.
type Status struct {
	Name     string `json:"name"`
	State    State  `json:"state"`
	PID      int    `json:"pid,omitempty"`
	ExitCode int    `json:"exitCode,omitempty"`
	// Failures counts crashes since the last reset period.
	Failures int `json:"failures,omitempty"`
}

// Service is what Get returns.
type Service struct {
	Config Config `json:"config"`
	Status Status `json:"status"`
}

// HostInfo is what the simulated host says about itself: what a Windows
// program would learn from the OS (GetComputerNameEx, the registry, the IP
// helper API).
type HostInfo struct {
	Hostname    string   `json:"hostname"`
	FQDN        string   `json:"fqdn"`
	IPv4        []string `json:"ipv4"`
	DefaultIPv4 string   `json:"defaultIPv4"`
	ProductName string   `json:"productName"` // "Windows Server 2019 Datacenter"
	Build       string   `json:"build"`       // "10.0.17763"
	// BootTime is when the host last booted (added by winsim; a reboot
	// changes it).
	BootTime time.Time `json:"bootTime,omitzero"`
	// What the pre-flight checks read (winsim Options): the update build
	// revision, the addresses DHCP gave, the system drive's free bytes,
	// how far the host's clock is off, and whether the host has no route
	// to the API server.
	UBR           int           `json:"ubr,omitempty"`
	DHCPv4        []string      `json:"dhcpv4,omitempty"`
	FreeDiskBytes uint64        `json:"freeDiskBytes,omitempty"`
	ClockOffset   time.Duration `json:"clockOffset,omitempty"`
	NoAPIRoute    bool          `json:"noAPIRoute,omitempty"`
	// UpdateRebootPending: a restart is pending that winnode did not ask
	// for (an update installed), until the host restarts.
	UpdateRebootPending bool `json:"updateRebootPending,omitempty"`
	// KubeletPortBlocked: a network firewall outside the host rejects
	// connections to the kubelet's port (winsim Options).
	KubeletPortBlocked bool `json:"kubeletPortBlocked,omitempty"`
}

// Errors the API returns, matched with errors.Is. Their text follows the
// Windows error they stand for.
var (
	ErrNotFound         = errors.New("the specified service does not exist as an installed service")                                                         // ERROR_SERVICE_DOES_NOT_EXIST
	ErrExists           = errors.New("the specified service already exists")                                                                                 // ERROR_SERVICE_EXISTS
	ErrDependentRunning = errors.New("a stop control has been sent to a service that other running services are dependent on")                               // ERROR_DEPENDENT_SERVICES_RUNNING
	ErrDisabled         = errors.New("the service cannot be started, either because it is disabled or because it has no enabled devices associated with it") // ERROR_SERVICE_DISABLED
	ErrDependencyFailed = errors.New("the dependency service or group failed to start")                                                                      // ERROR_SERVICE_DEPENDENCY_FAIL
	ErrNotActive        = errors.New("the service has not been started")                                                                                     // ERROR_SERVICE_NOT_ACTIVE
	ErrInvalid          = errors.New("the parameter is incorrect")                                                                                           // ERROR_INVALID_PARAMETER
	// Added by winsim (additive to the contract):
	ErrAlreadyRunning  = errors.New("an instance of the service is already running")      // ERROR_SERVICE_ALREADY_RUNNING
	ErrFileNotFound    = errors.New("the system cannot find the file specified")          // ERROR_FILE_NOT_FOUND (the service's program is missing)
	ErrMarkedForDelete = errors.New("the specified service has been marked for deletion") // ERROR_SERVICE_MARKED_FOR_DELETE
	// ErrRequestTimeout: the service's process was started but did not
	// connect to the service control manager (StartServiceCtrlDispatcher)
	// within the start timeout; the SCM killed it.
	ErrRequestTimeout = errors.New("the service did not respond to the start or control request in a timely fashion") // ERROR_SERVICE_REQUEST_TIMEOUT (1053)
	// ErrProcessAborted: the service's process ended before it connected
	// to the service control manager.
	ErrProcessAborted = errors.New("the process terminated unexpectedly") // ERROR_PROCESS_ABORTED (1067)
	// ErrControllerConnect answers a process that asks to be a service's
	// dispatcher although the SCM did not start it as one (a program run
	// from a console, or the child of a service's process).
	ErrControllerConnect = errors.New("the service process could not connect to the service controller") // ERROR_FAILED_SERVICE_CONTROLLER_CONNECT (1063)
)

// apiErrors maps the code carried on the wire to the error value.
var apiErrors = map[string]error{
	"NotFound":          ErrNotFound,
	"Exists":            ErrExists,
	"DependentRunning":  ErrDependentRunning,
	"Disabled":          ErrDisabled,
	"DependencyFailed":  ErrDependencyFailed,
	"NotActive":         ErrNotActive,
	"Invalid":           ErrInvalid,
	"AlreadyRunning":    ErrAlreadyRunning,
	"FileNotFound":      ErrFileNotFound,
	"MarkedForDelete":   ErrMarkedForDelete,
	"RequestTimeout":    ErrRequestTimeout,
	"ProcessAborted":    ErrProcessAborted,
	"ControllerConnect": ErrControllerConnect,
}

// CodeOf returns the wire code of err (one of the keys of apiErrors), or "".
func CodeOf(err error) string {
	for code, e := range apiErrors {
		if errors.Is(err, e) {
			return code
		}
	}
	return ""
}

// APIError is the JSON body of a failed request.
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// EncodeError is how the server answers a failed request: the HTTP status
// and the body for err. The client (Client.do) turns the body back into an
// error matching the same Err value.
func EncodeError(err error) (int, APIError) {
	code := CodeOf(err)
	status := http.StatusConflict
	switch code {
	case "NotFound":
		status = http.StatusNotFound
	case "Invalid":
		status = http.StatusBadRequest
	case "":
		code, status = "Failed", http.StatusInternalServerError
	}
	// The client puts the error's own text back in front of the message.
	msg := err.Error()
	if e, ok := apiErrors[code]; ok {
		msg = strings.TrimPrefix(msg, e.Error()+": ")
	}
	return status, APIError{Code: code, Message: msg}
}

// Client talks to one simulated host's SCM.
type Client struct {
	http *http.Client
}

// Dial returns a client for the SCM listening on the Unix socket.
func Dial(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	return &Client{http: &http.Client{Transport: tr}}
}

// Routes of the API (all JSON):
//
//	GET    /v1/host                      -> HostInfo
//	GET    /v1/services                  -> []Status
//	POST   /v1/services         Config   -> create
//	GET    /v1/services/{name}           -> Service
//	PUT    /v1/services/{name}  Config   -> change configuration (not state)
//	DELETE /v1/services/{name}           -> delete (marked for deletion; gone once stopped)
//	POST   /v1/services/{name}/start     -> start (dependencies first)
//	POST   /v1/services/{name}/stop      -> stop (ErrDependentRunning if running services depend on it)
//	POST   /v1/dispatcher                -> the calling process answers the SCM as the service it was started as
//	GET    /v1/security?path=P           -> Security of the path (ErrFileNotFound if it does not exist)
//	PUT    /v1/security?path=P Security  -> set its owner and DACL ("" leaves one as it is)

func (c *Client) Host(ctx context.Context) (HostInfo, error) {
	var h HostInfo
	return h, c.do(ctx, http.MethodGet, "/v1/host", nil, &h)
}

func (c *Client) List(ctx context.Context) ([]Status, error) {
	var s []Status
	return s, c.do(ctx, http.MethodGet, "/v1/services", nil, &s)
}

func (c *Client) Create(ctx context.Context, cfg Config) error {
	return c.do(ctx, http.MethodPost, "/v1/services", cfg, nil)
}

func (c *Client) Get(ctx context.Context, name string) (Service, error) {
	var s Service
	return s, c.do(ctx, http.MethodGet, "/v1/services/"+url.PathEscape(name), nil, &s)
}

func (c *Client) Update(ctx context.Context, cfg Config) error {
	return c.do(ctx, http.MethodPut, "/v1/services/"+url.PathEscape(cfg.Name), cfg, nil)
}

func (c *Client) Delete(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/services/"+url.PathEscape(name), nil, nil)
}

func (c *Client) Start(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/v1/services/"+url.PathEscape(name)+"/start", nil, nil)
}

func (c *Client) Stop(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/v1/services/"+url.PathEscape(name)+"/stop", nil, nil)
}

// ConnectDispatcher is what a Windows service's process does first,
// StartServiceCtrlDispatcher: it tells the service control manager that
// the process it started for a service runs and answers it. The SCM knows
// the caller by its process (the Unix socket's peer), as Windows knows the
// process it created: only the process the SCM started for a service may
// answer for it (a console run or a child of that process gets
// ErrControllerConnect). Until its process answers, a service is
// StartPending and Start waits; a process that does not answer within the
// host's start timeout is killed and Start fails with ErrRequestTimeout.
// The stand-ins that answer on Windows (the kubelet and kube-proxy with
// --windows-service, containerd with --run-service, hybrid-overlay-node
// with --windows-service) and winnode-service.exe call it.
func (c *Client) ConnectDispatcher(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/v1/dispatcher", nil, nil)
}

// Security is a path's owner (a SID) and its own DACL in SDDL ("D:P(...)";
// "" when it has none and only inherits).
type Security struct {
	Owner string `json:"owner"`
	DACL  string `json:"dacl"`
}

func (c *Client) Security(ctx context.Context, path string) (Security, error) {
	var s Security
	return s, c.do(ctx, http.MethodGet, "/v1/security?path="+url.QueryEscape(path), nil, &s)
}

func (c *Client) SetSecurity(ctx context.Context, path string, s Security) error {
	return c.do(ctx, http.MethodPut, "/v1/security?path="+url.QueryEscape(path), s, nil)
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://scm"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("simulated service control manager: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("simulated service control manager: %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var ae APIError
		if json.Unmarshal(data, &ae) != nil || ae.Code == "" {
			return fmt.Errorf("simulated service control manager: %s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
		}
		if e, ok := apiErrors[ae.Code]; ok {
			return fmt.Errorf("%w: %s", e, ae.Message)
		}
		return fmt.Errorf("simulated service control manager: %s: %s", ae.Code, ae.Message)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("simulated service control manager: %s %s: bad answer: %w", method, path, err)
		}
	}
	return nil
}
