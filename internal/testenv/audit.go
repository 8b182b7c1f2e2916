package testenv

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The API server keeps an audit log of the writes made by members of
// system:masters (the administrator and the identities tests give the
// operator, UserConfig), so that a test can count what the operator
// writes against the real API server, per user, verb and resource
// (Writes). Kubelets, the controller manager and the scheduler are not
// logged: they write all the time and are not winnode's. One exception:
// the access reviews of kube-controller-manager's CSR approver, with
// their answers (ApproverReviews), the only trace it leaves of a CSR it
// decides not to approve.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  userGroups: ["system:masters"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: RequestResponse
  users: ["` + csrApproverUser + `"]
  verbs: ["create"]
  resources: [{group: "authorization.k8s.io", resources: ["subjectaccessreviews"]}]
- level: None
`

// csrApproverUser is who kube-controller-manager's csrapproving controller
// acts as (--use-service-account-credentials).
const csrApproverUser = "system:serviceaccount:kube-system:certificate-controller"

// auditFlags writes the audit policy into the environment's folder and
// returns the API server's flags that use it.
func (e *Env) auditFlags() ([]string, error) {
	policy := filepath.Join(e.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	e.auditLog = filepath.Join(e.Dir, "audit.log")
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + e.auditLog,
		// Written before the response: a write a client saw answered is in
		// the log when the client counts.
		"--audit-log-mode=blocking",
		"--audit-log-format=json",
		"--audit-log-maxsize=0",
	}, nil
}

// Write is one write request of the audit log.
type Write struct {
	User        string
	Verb        string // create, update, patch, delete, deletecollection
	Resource    string // e.g. windowsinstances, nodes, events
	Subresource string // e.g. status
	Namespace   string
	Name        string
	Code        int // the response's HTTP status
	Time        time.Time
}

func (w Write) String() string {
	r := w.Resource
	if w.Subresource != "" {
		r += "/" + w.Subresource
	}
	if w.Namespace != "" {
		return fmt.Sprintf("%s %s %s/%s (%d)", w.Verb, r, w.Namespace, w.Name, w.Code)
	}
	return fmt.Sprintf("%s %s %s (%d)", w.Verb, r, w.Name, w.Code)
}

// auditEvent is the part of an audit.k8s.io/v1 Event that Writes and
// ApproverReviews read.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
	// Logged for the CSR approver's access reviews only.
	RequestObject *struct {
		Spec struct {
			User               string   `json:"user"`
			Groups             []string `json:"groups"`
			ResourceAttributes *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"resourceAttributes"`
		} `json:"spec"`
	} `json:"requestObject"`
	ResponseObject *struct {
		Status struct {
			Allowed bool `json:"allowed"`
		} `json:"status"`
	} `json:"responseObject"`
}

// auditEvents calls f with each event of the audit log received at or
// after since, in the order the API server logged them.
func (e *Env) auditEvents(since time.Time, f func(ev *auditEvent)) error {
	if e.auditLog == "" {
		return errors.New("testenv: this API server keeps no audit log")
	}
	file, err := os.Open(e.auditLog)
	if err != nil {
		return fmt.Errorf("testenv: audit log: %w", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("testenv: audit log %s line %d: %w", e.auditLog, line, err)
		}
		if !ev.RequestReceived.Before(since) {
			f(&ev)
		}
	}
	return sc.Err()
}

// Writes lists the write requests of members of system:masters that user
// made (every such user: "") and the API server received at or after
// since, in the order it logged them.
func (e *Env) Writes(user string, since time.Time) ([]Write, error) {
	var out []Write
	err := e.auditEvents(since, func(ev *auditEvent) {
		if ev.User.Username == csrApproverUser || (user != "" && ev.User.Username != user) {
			return
		}
		w := Write{User: ev.User.Username, Verb: ev.Verb, Time: ev.RequestReceived}
		if ev.ObjectRef != nil {
			w.Resource, w.Subresource, w.Namespace, w.Name = ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.ObjectRef.Namespace, ev.ObjectRef.Name
		}
		if ev.ResponseStatus != nil {
			w.Code = ev.ResponseStatus.Code
		}
		out = append(out, w)
	})
	return out, err
}

// ApproverReview is a question kube-controller-manager's CSR approver
// asked the API server about a CSR's requester: whether User (in Groups)
// may create certificatesigningrequests/Subresource ("nodeclient" for a
// first client certificate, "selfnodeclient" for a renewal), and the
// answer. The approver asks each time it handles a CSR it recognises as a
// kubelet's, and approves only when Allowed.
type ApproverReview struct {
	User        string
	Groups      []string
	Subresource string
	Allowed     bool
	Time        time.Time
}

// ApproverReviews lists the access reviews the CSR approver of
// kube-controller-manager made at or after since, in order.
func (e *Env) ApproverReviews(since time.Time) ([]ApproverReview, error) {
	var out []ApproverReview
	err := e.auditEvents(since, func(ev *auditEvent) {
		if ev.User.Username != csrApproverUser || ev.RequestObject == nil || ev.ResponseObject == nil {
			return
		}
		spec := ev.RequestObject.Spec
		r := ApproverReview{User: spec.User, Groups: spec.Groups, Allowed: ev.ResponseObject.Status.Allowed, Time: ev.RequestReceived}
		if spec.ResourceAttributes != nil {
			r.Subresource = spec.ResourceAttributes.Subresource
		}
		out = append(out, r)
	})
	return out, err
}

// UserKubeconfig writes a kubeconfig file that authenticates as user with
// groups (UserConfig), for a program run as its own process.
func (e *Env) UserKubeconfig(user string, groups ...string) (string, error) {
	name := "user-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := e.pki.issue(name, user, groups, false, nil, nil); err != nil {
		return "", err
	}
	path := filepath.Join(e.Dir, name+".kubeconfig")
	return path, writeKubeconfig(path, e.Host, e.CACertFile, user, e.pki.path(name+".crt"), e.pki.path(name+".key"))
}
