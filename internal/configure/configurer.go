package configure

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/host"
	"github.com/winnode/winnode/internal/hosttext"
	"github.com/winnode/winnode/internal/inventory"
	"github.com/winnode/winnode/internal/logrotate"
	"github.com/winnode/winnode/internal/payload"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/platform"
)

// Steps of configuration and deconfiguration, as recorded in
// WindowsInstance status.step and shown by progress displays.
const (
	StepConnect     = "connect"
	StepInfo        = "info"
	StepCredentials = "credentials"
	StepPlan        = "plan"
	StepSync        = "sync"
	StepApply       = "apply"
	StepJoin        = "join"
	StepFinish      = "finish"
	StepDrain       = "drain"
	StepRemove      = "remove"
	StepDeleteNode  = "delete-node"
	// StepChecked is not a step of its own: AfterStep is told it after a
	// Ready instance was checked and found up to date (nothing uploaded,
	// nothing applied).
	StepChecked = "checked"
	// StepWaited is not a step either: AfterStep is told it each time an
	// upgrade waiting for its turn in the rollout looked and found none.
	StepWaited = "waited"
	// StepBlocked is not a step either: AfterStep is told it each time
	// Configure finds the instance waiting for an administrator (a changed
	// host key) and leaves it alone.
	StepBlocked = "blocked"
)

// Node labels and annotations the configurer sets.
const (
	// LabelWorker marks a configured Windows node as a worker.
	LabelWorker = "node-role.kubernetes.io/worker"
	// AnnotationCordoned on a Node says winnode cordoned it (while
	// configuring or upgrading) and will uncordon it; a node an
	// administrator cordoned is left cordoned.
	AnnotationCordoned = "winnode.io/cordoned"
)

// Configurer configures and deconfigures Windows hosts: the steps of
// DESIGN.md "Configuring one host", usable with or without the operator
// (winnodectl add/remove use it with no controller running).
//
// Configure and Deconfigure never block for long: where they must wait (for
// the Node, for evicted pods) they return a Result asking to be called again.
// Every step is idempotent, and the instance's status records enough (step,
// host key, node name, bootstrap token ID) for a crash at any point to be
// resumed by calling again.
type Configurer struct {
	// Metrics, when set, gives each node windows_exporter's serving
	// certificate (internal/metricstls: the operator's own CA, or
	// OpenShift's service CA): each host then runs windows_exporter on
	// 9182 with TLS (metrics.go). Nil: no exporter, unless
	// KubeletServingMetrics.
	Metrics MetricsCertificates
	// KubeletServingMetrics runs windows_exporter with the kubelet's own
	// serving certificate instead (plan.MetricsFacts.KubeletServing): for
	// nodes of Cluster API workload clusters, whose scrapers trust that
	// cluster's CA, not the operator's (metrics.go). Metrics is then nil.
	KubeletServingMetrics bool
	// Kube talks to the API server directly (no cache): Nodes, Secrets,
	// ConfigMaps, Pods, evictions, RBAC.
	Kube kubernetes.Interface
	// CSRs reads the CertificateSigningRequests of the cluster the host
	// joins from a cache that the CSR approver's watch keeps filled (the
	// manager's, or the workload cluster's): the kubelet-port check of a
	// Ready host then lists no CSR from the API server. Nil: the check
	// lists the kubelet-serving CSRs from the API server (winnodectl,
	// which runs no cache).
	CSRs client.Reader
	// Signer is the operator's SSH private key (Secret cloud-private-key).
	Signer ssh.Signer
	// PayloadDir holds the payload files; Payload is its manifest
	// (payload.Load(PayloadDir)).
	PayloadDir string
	Payload    *payload.Manifest
	// Version is the winnode version configuring hosts (the operator's).
	Version string
	// Rollout bounds the nodes that upgrades take out of service at once
	// (upgrade.go). Nil: no bound (winnodectl upgrade, one host).
	Rollout *Rollout
	// Addresses says which host addresses may be connected to; its zero
	// value refuses loopback and link-local ones (inventory.AddressPolicy).
	Addresses inventory.AddressPolicy

	// Persist saves inst.Status; it is called after every step, so that a
	// crash resumes at the step reached. Nil: status is only kept in memory
	// (winnodectl add).
	Persist func(ctx context.Context, inst *winnodev1.WindowsInstance) error
	// Reload reads the instance as it is stored now, for a save that met a
	// conflict (save.go). Nil: a conflict is returned as it is.
	Reload func(ctx context.Context, inst *winnodev1.WindowsInstance) (*winnodev1.WindowsInstance, error)
	// Event reports what happened (eventType is corev1.EventTypeNormal or
	// Warning). Nil: not reported. Never given secrets.
	Event func(inst *winnodev1.WindowsInstance, eventType, reason, message string)
	// Evidence reports an event whose message is the evidence itself (the
	// end of a stopped service's log), which must reach the reader whole
	// each time: never folded into the series of an earlier event of the
	// same reason, as client-go's recorders fold them. Nil: Event.
	Evidence func(inst *winnodev1.WindowsInstance, eventType, reason, message string)
	// Progress receives upload progress. Nil: not reported.
	Progress func(inst *winnodev1.WindowsInstance, p host.Progress)
	// Uploaded is told how many bytes each sync moved (the
	// winnode_bytes_uploaded_total metric). Nil: not counted.
	Uploaded func(bytes int64)
	// SSHFailed is told about every failed SSH connection (the SSH failures
	// metric), with its reason. Nil: not counted.
	SSHFailed func(reason string)
	// Configured is told how long each configuration took, from its start
	// to the Node being Ready (the configuration duration histogram). Nil:
	// not measured.
	Configured func(d time.Duration)
	// AfterStep, when set, is called after each step's status is persisted
	// (tests use it to stop the operator at a given step).
	AfterStep func(inst *winnodev1.WindowsInstance, step string)
	// Crash, when set, is called after AfterStep; an error stops the work
	// right there, as if the process had died: nothing more is done or
	// recorded (tests stop the operator at each step with it).
	Crash func(inst *winnodev1.WindowsInstance, step string) error

	// Instances lists the WindowsInstances this one is compared with for
	// conflicts of node name, host key and address (internal/identity):
	// those of the same cluster. Nil: there are no others (winnodectl add).
	// What it returns may be shared with a cache: read only.
	Instances func(ctx context.Context) ([]winnodev1.WindowsInstance, error)
	// Peers, when set, lists the WindowsInstances filed under any of keys
	// (the keys of inventory.EndpointKeys and identity.Keys: an index of
	// the operator's cache), in place of Instances: each check reads the
	// few instances that can conflict rather than the whole fleet. Read
	// only, like Instances.
	Peers func(ctx context.Context, keys []string) ([]winnodev1.WindowsInstance, error)
	// Resolve resolves DNS names for the address conflict check (a name
	// and an IP of one host are one host). Nil: names are compared as
	// written.
	Resolve inventory.Resolver
	// APIServerNames returns the DNS names of the API server's serving
	// certificate, which no node may be named (identity.CheckNodeName).
	// Nil: none are known.
	APIServerNames func(ctx context.Context) ([]string, error)
	// MaxAnswer bounds what the operator reads of a host's answer (the
	// agent's info, apply and remove documents): host.DefaultMaxOutput
	// (1 MiB) when zero.
	MaxAnswer int
	// MinTransferRate (bytes per second) and SlowTransferGrace: an upload
	// that moves less than MinTransferRate bytes per second over any
	// SlowTransferGrace fails its step with SlowHost, and the host is
	// retried with backoff (host.Options). Zero: host's defaults.
	MinTransferRate   int
	SlowTransferGrace time.Duration

	// Timeouts; zero values take the defaults below.
	DialTimeout    time.Duration // SSH connect and handshake (15s)
	AgentTimeout   time.Duration // one info or remove run (2m)
	ApplyTimeout   time.Duration // one apply run (10m)
	SyncTimeout    time.Duration // one sync (30m)
	JoinTimeout    time.Duration // from apply to Node Ready (10m)
	DrainTimeout   time.Duration // from deletion to giving up on eviction (3m)
	PollInterval   time.Duration // requeue while waiting (2s)
	ResyncPeriod   time.Duration // recheck of a Ready instance (10m)
	UpgradeRecheck time.Duration // recheck of an upgrade waiting for its turn (15s)
	TokenTTL       time.Duration // bootstrap token lifetime (bootstrap.DefaultTokenTTL)
	TokenMinValid  time.Duration // a token with less left is replaced (15m)

	// JoinCredentials is the form of the kubelet's join credentials
	// (--join-credentials; "" is bootstrap.ModeAuto): see credentials.go.
	JoinCredentials bootstrap.Mode
	// JoinNamespace is where join ServiceAccounts live: the operator's
	// namespace (winnodectl: kube-system). Required for the ServiceAccount
	// form; the CSR approver must be given the same namespace.
	JoinNamespace string
	// Network is the pod network mode (--network: auto, flannel, ovn-hybrid
	// or external; "" is auto): network.go.
	Network string
	// ServiceCIDR is the cluster's Service range, for the pod network's
	// NAT exceptions and routes (the operator's --service-cidr).
	ServiceCIDR string
	// HybridClusterCIDR is the hybrid overlay's cluster network
	// (--hybrid-cluster-cidr), which ovn-hybrid needs: hybridoverlay.go.
	HybridClusterCIDR string
	// Logs are the rotation limits of the host's service logs
	// (--log-file-size, --log-file-age); nil: logrotate.Defaults.
	Logs *logrotate.Limits
	// Detector answers ModeAuto; share one per process so the API server is
	// probed once. Nil: a Detector of this Configurer's own.
	Detector *bootstrap.Detector
	// Platform says where cluster facts come from (--platform: auto,
	// openshift or kubernetes; "" is auto, resolved at each configuration):
	// clusterfacts.go. PlatformReason says why, when the caller resolved it.
	Platform       platform.Platform
	PlatformReason string
	// OpenShift reads OpenShift's configuration objects (openshift.NewReader);
	// required on the openshift platform.
	OpenShift client.Reader
	// APIServer, when set, is the API server URL the host's kubelet joins,
	// in place of kube-public/cluster-info's (a Cluster API workload
	// cluster's Cluster.spec.controlPlaneEndpoint); the CA stays
	// cluster-info's.
	APIServer string
	// RefreshTokens, when set, keeps the instance's bootstrap token alive
	// until its Node registers, as Cluster API's kubeadm bootstrap provider
	// does (bootstrap.RefreshToken, with TokenTTL): its expiration is moved
	// on rather than a new token issued.
	RefreshTokens bool
	// ContainerRuntime is the mode of an instance whose spec names none
	// (the operator's --container-runtime; winnodectl add's). "" is
	// Managed.
	ContainerRuntime winnodev1.ContainerRuntime
	// ConfigNamespace is where, on Kubernetes, the windows-registries
	// ConfigMap, its credentials Secret and the TrustedCAConfigMap are
	// read (the operator's namespace; "": none are read). Proxy is the
	// cluster-wide proxy there (the operator's HTTP_PROXY, HTTPS_PROXY,
	// NO_PROXY). On OpenShift all three come from the cluster's
	// configuration (runtime.go).
	ConfigNamespace    string
	TrustedCAConfigMap string
	Proxy              plan.ProxyFacts
	// ConfigKube reads ConfigNamespace: the operator's own cluster, also
	// when Kube is a Cluster API workload cluster's (whose ServiceAccount
	// may not read the operator's configuration, which is not there
	// anyway). nil: Kube.
	ConfigKube kubernetes.Interface
	// SkipPreflight names pre-flight checks skipped for every instance
	// (the operator's --skip-preflight; preflight.go), beside each
	// instance's winnode.io/skip-preflight annotation. MinFreeDiskGiB is
	// the free space the disk check asks of the system drive (0:
	// plan.DefaultMinFreeGiB). LookupHost resolves the DNS check's node
	// name (nil: the system's resolver).
	SkipPreflight  []string
	MinFreeDiskGiB int
	LookupHost     func(ctx context.Context, name string) ([]string, error)

	Log logr.Logger

	saved        *winnodev1.WindowsInstanceStatus // last status persisted
	drainStarted time.Time                        // for instances without a deletion timestamp
	// warnings counts the agent's warnings recorded as events in this pass
	// (apply.go: at most maxWarningEvents).
	warnings warningBudget
	// pass holds what one pass (Configure, Deconfigure) read once for all
	// its steps; nil outside a pass.
	pass *passState
}

// passState is what a pass keeps between its steps.
type passState struct {
	facts *passFacts // clusterfacts.go
}

// Result says when to call again; the zero Result means "done until
// something changes".
type Result struct {
	RequeueAfter time.Duration
}

func (c *Configurer) dialTimeout() time.Duration  { return orDefault(c.DialTimeout, 15*time.Second) }
func (c *Configurer) agentTimeout() time.Duration { return orDefault(c.AgentTimeout, 2*time.Minute) }
func (c *Configurer) applyTimeout() time.Duration { return orDefault(c.ApplyTimeout, 10*time.Minute) }
func (c *Configurer) syncTimeout() time.Duration  { return orDefault(c.SyncTimeout, 30*time.Minute) }
func (c *Configurer) joinTimeout() time.Duration  { return orDefault(c.JoinTimeout, 10*time.Minute) }
func (c *Configurer) drainTimeout() time.Duration { return orDefault(c.DrainTimeout, 3*time.Minute) }
func (c *Configurer) pollInterval() time.Duration { return orDefault(c.PollInterval, 2*time.Second) }
func (c *Configurer) resyncPeriod() time.Duration { return orDefault(c.ResyncPeriod, 10*time.Minute) }
func (c *Configurer) upgradeRecheck() time.Duration {
	return orDefault(c.UpgradeRecheck, upgradeRecheck)
}
func (c *Configurer) tokenTTL() time.Duration {
	return orDefault(c.TokenTTL, bootstrap.DefaultTokenTTL)
}
func (c *Configurer) tokenMinValid() time.Duration {
	return orDefault(c.TokenMinValid, 15*time.Minute)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// step records the step the instance is at and persists the status.
func (c *Configurer) step(ctx context.Context, inst *winnodev1.WindowsInstance, step string) error {
	inst.Status.Step = step
	if err := c.save(ctx, inst); err != nil {
		return err
	}
	c.Log.V(1).Info("step", "instance", inst.Name, "step", step)
	if c.AfterStep != nil {
		c.AfterStep(inst, step)
	}
	if c.Crash != nil {
		if err := c.Crash(inst, step); err != nil {
			return &crashError{err}
		}
	}
	return ctx.Err()
}

// crashError is a Crash hook's error: like a stop, nothing is recorded.
type crashError struct{ error }

func (e *crashError) Unwrap() error { return e.error }

// Persisted tells the Configurer that inst's status is the one stored in
// the cluster (the reconciler has just read it), so that a step that changes
// nothing writes nothing.
func (c *Configurer) Persisted(inst *winnodev1.WindowsInstance) {
	c.saved = inst.Status.DeepCopy()
}

// save persists the status when it changed since the last save.
func (c *Configurer) save(ctx context.Context, inst *winnodev1.WindowsInstance) error {
	if c.Persist == nil {
		return nil
	}
	if c.saved != nil && equality.Semantic.DeepEqual(*c.saved, inst.Status) {
		return nil
	}
	err := c.Persist(ctx, inst)
	if apierrors.IsConflict(err) {
		err = c.saveOverApproval(ctx, inst, err)
	}
	if err != nil {
		return fmt.Errorf("saving the status of WindowsInstance %s: %w", inst.Name, err)
	}
	c.saved = inst.Status.DeepCopy()
	return nil
}

// event records what happened as an event and a log line. Its message may
// quote what the host said: it is cleaned of control characters first
// (hosttext), as every message of the engine is.
func (c *Configurer) event(inst *winnodev1.WindowsInstance, eventType, reason, format string, args ...any) {
	msg := hosttext.Clean(fmt.Sprintf(format, args...))
	c.Log.Info(msg, "instance", inst.Name, "reason", reason)
	if c.Event != nil {
		c.Event(inst, eventType, reason, msg)
	}
}

// evidence is event for a message that is evidence (Configurer.Evidence).
func (c *Configurer) evidence(inst *winnodev1.WindowsInstance, eventType, reason, msg string) {
	if c.Evidence == nil {
		c.event(inst, eventType, reason, "%s", msg)
		return
	}
	c.Log.Info(msg, "instance", inst.Name, "reason", reason)
	c.Evidence(inst, eventType, reason, msg)
}

// truncate cuts s to at most n bytes, on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// setPhase moves the instance to a phase, with an event when it changes.
func (c *Configurer) setPhase(inst *winnodev1.WindowsInstance, phase winnodev1.Phase) {
	if inst.Status.Phase == phase {
		return
	}
	from := inst.Status.Phase
	inst.Status.Phase = phase
	if from == "" {
		from = "new"
	}
	typ := corev1.EventTypeNormal
	if phase == winnodev1.PhaseFailed {
		typ = corev1.EventTypeWarning
	}
	c.event(inst, typ, string(phase), "phase %s -> %s", from, phase)
}

// StepError is a failed step: the condition reason it maps to and what to
// do. Configure returns it after recording it in the status (phase Failed,
// lastError).
//
// Its message is the one place where a failure is given its step:
// "step connect: <what failed>". So the error it wraps never names the
// step (stepErr keeps the innermost step and adds none), status.lastError
// and the Warning event hold that message as it is, and whoever shows
// lastError beside status.step (winnodectl status --watch, the demo)
// does not add the step again (cli/view).
type StepError struct {
	Step   string
	Reason string // a condition reason (winnodev1.Reason*)
	Err    error
}

func (e *StepError) Error() string { return fmt.Sprintf("step %s: %v", e.Step, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// stepErr makes err a failure of step, unless a step already claimed it
// (the inner step is the one that failed).
func stepErr(step, reason string, err error) error {
	var se *StepError
	if errors.As(err, &se) {
		return err
	}
	return &StepError{Step: step, Reason: reason, Err: err}
}

// fail records a failed step: phase Failed, lastError, an event. The caller
// retries with backoff.
func (c *Configurer) fail(ctx context.Context, inst *winnodev1.WindowsInstance, err error) error {
	var crash *crashError
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || apierrors.IsConflict(err) || errors.As(err, &crash) {
		// Stopped (operator shutting down), or the status was written
		// meanwhile: not the host's fault. Record nothing; the next call
		// resumes at the persisted step. A step can see its context
		// canceled before this pass's ctx reports it (the shutdown
		// cancels contexts one after another), hence errors.Is as well:
		// a pass cut short that way was recorded as CredentialsFailed.
		return err
	}
	reason := winnodev1.ReasonInProgress
	if inst.Status.Step != "" {
		// A failure no step claimed is the current step's.
		err = stepErr(inst.Status.Step, reason, err)
	}
	var se *StepError
	if errors.As(err, &se) {
		reason = se.Reason
	}
	msg := ErrorMessage(err)
	// The same failure again (a host still down, retried with backoff) is
	// already in the status and was already an event: recording it again
	// would write to the API server on every retry, and keep an event
	// series that client-go refreshes every 30 minutes, for every such
	// instance, for as long as it fails.
	repeated := inst.Status.Phase == winnodev1.PhaseFailed && inst.Status.LastError == msg &&
		c.saved != nil && c.saved.Phase == winnodev1.PhaseFailed && c.saved.LastError == msg
	inst.Status.LastError = msg
	c.setPhase(inst, winnodev1.PhaseFailed)
	// The failure is logged once, by the caller that gets it (the
	// operator's reconciler logs each failed pass with its retry).
	if !repeated && c.Event != nil {
		c.Event(inst, corev1.EventTypeWarning, reason, msg)
	}
	if serr := c.save(context.WithoutCancel(ctx), inst); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// ErrorMessage is err as the status, an event or a log line may show it:
// tokens redacted, control characters a host may have sent cleaned, at
// most 2,000 bytes.
func ErrorMessage(err error) string {
	return truncate(hosttext.Clean(redact(err.Error())), 2000)
}

var tokenPattern = regexp.MustCompile(`\b([a-z0-9]{6})\.[a-z0-9]{16}\b`)

// redact keeps tokens out of messages, should one ever reach an error: a
// bootstrap token looks like "abcdef.0123456789abcdef".
func redact(s string) string {
	return tokenPattern.ReplaceAllString(s, "$1.<redacted>")
}
