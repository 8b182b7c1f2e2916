package agent

import (
	"context"
	"encoding/pem"
	"fmt"
	"os"
	"slices"

	"github.com/winnode/winnode/internal/plan"
)

// trustRootCertificates puts the certificates of the plan's
// RootCertificates files (in place by now) into the machine's Trusted Root
// store, and takes out those winnode added earlier that the plan no longer
// has. Only a certificate the store did not hold is recorded as winnode's:
// one an administrator (or Windows) put there stays when winnode leaves.
func (r *applyRun) trustRootCertificates(ctx context.Context) error {
	var want []string
	for _, path := range r.plan.RootCertificates {
		ders, err := r.a.readCertificates(path)
		if err != nil {
			return err
		}
		for _, der := range ders {
			thumbprint, added, err := r.a.Platform.AddRootCertificate(ctx, der)
			if err != nil {
				return &plan.Error{Code: plan.ErrHost, File: path, Message: err.Error()}
			}
			want = append(want, thumbprint)
			if added {
				r.a.Log.Info("trusted a root certificate", "thumbprint", thumbprint, "file", path)
				r.st.RootCertificates = append(r.st.RootCertificates, thumbprint)
				if err := r.saveState(); err != nil {
					return err
				}
			}
		}
	}
	return r.a.dropRootCertificates(ctx, r.st, func(t string) bool { return slices.Contains(want, t) }, r.saveState)
}

// dropRootCertificates removes the recorded certificates keep does not
// keep, saving the state after each.
func (a *Agent) dropRootCertificates(ctx context.Context, st *State, keep func(string) bool, save func() error) error {
	for _, t := range slices.Clone(st.RootCertificates) {
		if keep(t) {
			continue
		}
		a.Log.Info("removing a root certificate winnode added", "thumbprint", t)
		if err := a.Platform.RemoveRootCertificate(ctx, t); err != nil {
			return &plan.Error{Code: plan.ErrHost, Message: err.Error()}
		}
		st.RootCertificates = slices.DeleteFunc(st.RootCertificates, func(e string) bool { return e == t })
		if err := save(); err != nil {
			return err
		}
	}
	return nil
}

// readCertificates reads the DER certificates of a PEM file on the host.
func (a *Agent) readCertificates(path string) ([][]byte, error) {
	local, err := a.localPath(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return nil, &plan.Error{Code: plan.ErrHost, File: path, Message: fmt.Sprintf("reading the CA bundle: %v", err)}
	}
	var out [][]byte
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			out = append(out, b.Bytes)
		}
	}
	if len(out) == 0 {
		return nil, &plan.Error{Code: plan.ErrHost, File: path, Message: "the CA bundle holds no PEM certificate"}
	}
	return out, nil
}
