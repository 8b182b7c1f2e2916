package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/preflight"
)

// The host side of the pre-flight checks (issue 28): run within `info
// --preflight`, so a healthy host costs no extra exec. What each check
// reads is gathered here; what it means is decided in internal/preflight.
// A check whose reading fails is a warning naming it (preflight.CannotRun),
// never a failed info.

// preflightTimeout bounds the API server's dial and handshake.
const preflightTimeout = 10 * time.Second

// hostPreflight runs the host-side checks for info, and reports the
// host's clock and update revision for the operator's.
func (a *Agent) hostPreflight(ctx context.Context, req *plan.PreflightRequest, facts HostFacts, info *plan.Info) {
	sys := &plan.HostSystem{UBR: facts.UBR}
	if now, err := a.Platform.Clock(ctx); err == nil {
		sys.Clock = now.UTC()
	}
	info.System = sys
	out := []plan.PreflightResult{preflight.CheckWindowsBuild(facts.Build, facts.UBR)}
	out = append(out, a.featureCheck(ctx, info.RebootPending || facts.UpdateRebootPending))
	if free, err := a.Platform.SystemDriveFree(ctx); err != nil {
		out = append(out, preflight.CannotRun(preflight.Disk, err))
	} else {
		out = append(out, preflight.CheckDisk(free, req.MinFreeGiB))
	}
	out = append(out, preflight.CheckAPIServer(req.APIServer, a.reachAPIServer(ctx, req)))
	if running, err := a.Platform.DefenderRunning(ctx); err != nil {
		out = append(out, preflight.CannotRun(preflight.Defender, err))
	} else {
		out = append(out, preflight.CheckDefender(running))
	}
	out = append(out, preflight.CheckAddressing(req.ListedByIP, req.Address, facts.DHCPv4))
	info.Preflight = out
}

// featureCheck reads the Containers feature.
func (a *Agent) featureCheck(ctx context.Context, rebootPending bool) plan.PreflightResult {
	state, err := a.Platform.WindowsFeature(ctx, plan.ContainersFeature)
	switch {
	case errors.Is(err, ErrFeatureUnknown):
		return preflight.CheckContainersFeature("", rebootPending)
	case err != nil:
		return preflight.CannotRun(preflight.ContainersFeature, err)
	}
	return preflight.CheckContainersFeature(preflight.FeatureState(state), rebootPending)
}

// reachAPIServer dials the API server from the host and completes a TLS
// handshake that verifies its certificate against the cluster CA (nothing
// is sent after it). nil when no endpoint was given: CheckAPIServer says
// the check could not run.
func (a *Agent) reachAPIServer(ctx context.Context, req *plan.PreflightRequest) error {
	if req.APIServer == "" {
		return nil
	}
	u, err := url.Parse(req.APIServer)
	if err != nil || u.Host == "" {
		return fmt.Errorf("the endpoint %q is not a URL", req.APIServer)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "443"
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(req.CAData) {
		return errors.New("the cluster CA handed to the agent holds no PEM certificate")
	}
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	raw, err := a.Platform.Dial(ctx, net.JoinHostPort(host, port))
	if err != nil {
		return err
	}
	defer raw.Close()
	conn := tls.Client(raw, &tls.Config{ServerName: host, RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err := conn.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	return conn.Close()
}

// maxPreflightRequest bounds what `info --preflight` reads: a URL, a CA
// bundle and a few numbers.
const maxPreflightRequest = 1 << 20

// ReadPreflightRequest reads the operator's request (JSON) from r.
func ReadPreflightRequest(r io.Reader) (*plan.PreflightRequest, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxPreflightRequest+1))
	if err != nil {
		return nil, plan.Errorf(plan.ErrUsage, "reading the pre-flight request from standard input: %v", err)
	}
	if len(data) > maxPreflightRequest {
		return nil, plan.Errorf(plan.ErrUsage, "the pre-flight request on standard input is larger than %d bytes", maxPreflightRequest)
	}
	var req plan.PreflightRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, plan.Errorf(plan.ErrUsage, "the pre-flight request on standard input is not JSON: %v", err)
	}
	return &req, nil
}

// preflight runs the host-side pre-flight checks in a Pull-mode join
// (Cluster API), with the join config's API server and CA, and writes
// each result to the join's log: nobody runs `info` on such a host, and
// its log is what an administrator reads (cloudbase-init's, and the
// agent's own). A failure stops nothing here: the join then fails where
// the cause bites, with that step's error, and the log says why first.
func (r *joinRun) preflight(ctx context.Context) error {
	log := r.log("preflight")
	req := &plan.PreflightRequest{APIServer: r.cfg.Cluster.Server, CAData: r.cfg.Cluster.CAData}
	var info plan.Info
	r.a.hostPreflight(ctx, req, r.facts, &info)
	for _, res := range info.Preflight {
		switch res.Result {
		case plan.PreflightPass:
			log.Info("pre-flight check passed", "check", res.Check, "result", res.Result, "message", res.Message)
		default:
			log.Warn("pre-flight check "+string(res.Result), "check", res.Check, "result", res.Result, "message", res.Message)
		}
	}
	return nil
}
