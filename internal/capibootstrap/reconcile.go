package capibootstrap

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/sshkey"
	"github.com/winnode/winnode/internal/workload"
)

// Reconciler writes the bootstrap data of WinnodeConfigs.
type Reconciler struct {
	// Client writes: the Secrets and the configs' status.
	Client client.Client
	// Cache reads WinnodeConfigs and Clusters in every namespace (the
	// manager's cache, Part).
	Cache client.Reader
	// Reader reads the reconciled WinnodeConfig and Machines from the API
	// server (Machines are not watched).
	Reader client.Reader
	// KeyReader reads the operator's key Secret in Namespace.
	KeyReader client.Reader
	// Namespace is the operator namespace (Secret cloud-private-key).
	Namespace string
	Recorder  events.EventRecorder
	// Workloads is how the operator acts in each Machine's workload
	// cluster (internal/workload.Clusters): the data is written only once
	// it can, and condition WorkloadClusterReachable says whether it can.
	Workloads Workloads
	// Pull is what Pull mode needs (pull.go).
	Pull Pull

	names names
}

// Reconcile follows the contract's workflow: wait for the owning Machine
// and its Cluster, honour a pause, check the spec, then write the
// bootstrap-data Secret once and report it in the status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// Read from the API server, not the cache: whether the Secret's name
	// was claimed by an earlier reconcile (secret.go) must not be answered
	// by a cache that has not seen that reconcile's last status write yet.
	var cfg bootstrapv1.WinnodeConfig
	if err := r.Reader.Get(ctx, req.NamespacedName, &cfg); err != nil {
		if apierrors.IsNotFound(err) {
			r.names.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !cfg.DeletionTimestamp.IsZero() {
		// Its Secret goes with it (owner reference); its bootstrap token
		// is deleted here (release.go).
		return reconcile.Result{}, r.release(ctx, &cfg)
	}
	orig := cfg.DeepCopy()
	res, err := r.reconcile(ctx, &cfg, &orig)
	return res, errors.Join(err, r.patchStatus(ctx, orig, &cfg))
}

// workloadRecheck is how soon a config whose workload cluster cannot be
// used is looked at again: the operator reads kubeconfig Secrets by name
// and is not told when one appears or changes.
const workloadRecheck = 10 * time.Second

// reconcile runs the steps on cfg's status; *orig is what the API server
// holds (it moves on when a step writes the status itself).
func (r *Reconciler) reconcile(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, orig **bootstrapv1.WinnodeConfig) (reconcile.Result, error) {
	machine, cluster, w, err := r.owners(ctx, cfg)
	if err != nil || w != nil {
		if w != nil {
			setReady(cfg, false, w.reason, w.message)
		}
		return reconcile.Result{}, err
	}
	if isPaused, why := paused(cluster, cfg); isPaused {
		ctrl.LoggerFrom(ctx).Info("paused", "reason", why)
		setPaused(cfg, true, why)
		return reconcile.Result{}, nil
	}
	setPaused(cfg, false, "")
	wc, err := r.workloadCluster(ctx, cfg, cluster)
	if err != nil {
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	if wc == nil {
		res.RequeueAfter = workloadRecheck
	}
	if ptr.Deref(cfg.Status.Initialization.DataSecretCreated, false) {
		// Written once (secret.go): a later spec change does not reach a
		// Machine that exists.
		setCreated(cfg)
		if wc == nil || ModeOfConfig(cfg) != bootstrapv1.ModePull {
			return res, nil
		}
		return r.followJoin(ctx, cfg, machine, wc) // nodejoin.go
	}
	if err := r.validateAndWrite(ctx, cfg, orig, machine, cluster, wc); err != nil || wc == nil || !ptr.Deref(cfg.Status.Initialization.DataSecretCreated, false) || ModeOfConfig(cfg) != bootstrapv1.ModePull {
		return res, err
	}
	return reconcile.Result{RequeueAfter: r.waitForNode(cfg, machine)}, nil
}

// validateAndWrite checks the spec and the mode, then writes the data once
// the workload cluster is reachable.
func (r *Reconciler) validateAndWrite(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, orig **bootstrapv1.WinnodeConfig, machine *clusterv1.Machine, cluster *clusterv1.Cluster, wc *workload.Cluster) error {
	if errs := ValidateSpec(cfg.Spec); len(errs) > 0 {
		msg := errs.ToAggregate().Error()
		if setReady(cfg, false, bootstrapv1.ReasonInvalidSpec, msg) {
			r.event(cfg, true, EventReasonInvalidSpec, ActionValidate, msg)
		}
		return nil
	}
	if wc == nil {
		c := meta.FindStatusCondition(cfg.Status.Conditions, bootstrapv1.ConditionWorkloadClusterReachable)
		setReady(cfg, false, bootstrapv1.ReasonWaitingForWorkloadCluster, c.Message)
		return nil
	}
	return r.write(ctx, cfg, orig, machine, cluster, wc)
}

// pushData renders the Push bootstrap data: SSH with the operator's key.
func (r *Reconciler) pushData(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, machine *clusterv1.Machine, name string) ([]byte, *blocked, error) {
	signer, err := sshkey.LoadSigner(ctx, r.KeyReader, r.Namespace)
	var keyErr *sshkey.KeyError
	if errors.As(err, &keyErr) {
		return nil, &blocked{bootstrapv1.ReasonWaitingForSSHKey, err.Error()}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	cfg.Status.KeyFingerprint = sshkey.KeyFingerprint(signer)
	data, err := BootstrapData(DataInput{
		Namespace: cfg.Namespace, Machine: machine.Name, ComputerName: name,
		PublicKey: signer.PublicKey(), Firewall: firewallRules(cfg.Spec.FirewallPorts),
	})
	return data, nil, err
}

// write renders the data of the config's mode and creates the Secret,
// claiming its name in the status first (secret.go says why).
func (r *Reconciler) write(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, orig **bootstrapv1.WinnodeConfig, machine *clusterv1.Machine, cluster *clusterv1.Cluster, wc *workload.Cluster) error {
	name, ok, err := r.computerName(ctx, cfg, machine.Name)
	if err != nil {
		return err
	}
	if !ok {
		setReady(cfg, false, bootstrapv1.ReasonComputerNameConflict, fmt.Sprintf(
			"the %d computer names derived for Machine %s are all taken by other WinnodeConfigs; delete the Machine so that its MachineSet makes one with a new name, or set spec.computerNamePrefix", maxAttempts, machine.Name))
		return nil
	}
	cfg.Status.ComputerName = name
	var data []byte
	var b *blocked
	if ModeOfConfig(cfg) == bootstrapv1.ModePull {
		data, b, err = r.pullData(ctx, cfg, orig, machine, name, wc) // pull.go
	} else {
		data, b, err = r.pushData(ctx, cfg, machine, name)
	}
	if b != nil {
		if setReady(cfg, false, b.reason, b.message) && b.reason != bootstrapv1.ReasonWaitingForSSHKey {
			r.event(cfg, true, b.reason, ActionValidate, b.message)
		}
		return err
	}
	if err != nil {
		return err
	}
	claimedBefore := (*orig).Status.DataSecretName == cfg.Name
	cfg.Status.DataSecretName = cfg.Name
	if !claimedBefore {
		if err := r.patchStatus(ctx, *orig, cfg); err != nil {
			return err
		}
		*orig = cfg.DeepCopy()
	}
	w, err := r.createSecret(ctx, dataSecret(cfg, cluster.Name, data), claimedBefore)
	if w != nil {
		// No Secret of ours exists: give the claim up, so that the next
		// attempt claims afresh.
		cfg.Status.DataSecretName = ""
		if setReady(cfg, false, w.reason, w.message) {
			r.event(cfg, true, EventReasonNotWritten, ActionCreate, w.message)
		}
	}
	if err != nil || w != nil {
		return err
	}
	if setCreated(cfg) {
		r.event(cfg, false, EventReasonDataSecretCreated, ActionCreate, fmt.Sprintf("Secret %s written: computer name %s", cfg.Name, name))
	}
	return nil
}
