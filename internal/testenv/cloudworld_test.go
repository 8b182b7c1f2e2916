package testenv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the tests of both Machine worlds (machineapi_test.go, capi_test.go)
// share: a stand-in for the simulated cloud, the world started on it, a
// record of the Machines' phases.

// testCloud is the simulated cloud's HTTP API reduced to its bookkeeping:
// instances by name, each with the next address from 127.0.0.200, and the
// user data and deletions it was sent. It boots nothing.
type testCloud struct {
	mu        sync.Mutex
	instances map[string]testInstance
	userData  map[string][]byte
	deleted   []string
	next      int
}

type testInstance struct {
	Name       string `json:"name"`
	ID         string `json:"id"`
	ProviderID string `json:"providerID"`
	Address    string `json:"address"`
	Hostname   string `json:"hostname"`
	State      string `json:"state"`
}

func (c *testCloud) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/instances/")
	if !ok || name == "" || strings.Contains(name, "/") {
		http.Error(w, "no such path", http.StatusNotFound)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	inst, exists := c.instances[name]
	switch r.Method {
	case http.MethodPut:
		if !exists {
			var req struct {
				UserData string `json:"userData"`
			}
			err := json.NewDecoder(r.Body).Decode(&req)
			data, err2 := base64.StdEncoding.DecodeString(req.UserData)
			if err != nil || err2 != nil || len(data) == 0 {
				http.Error(w, "userData: want base64 of the user data", http.StatusBadRequest)
				return
			}
			id := fmt.Sprintf("i-%04d", c.next)
			inst = testInstance{Name: name, ID: id, ProviderID: "winsim:///" + id,
				Address: fmt.Sprintf("127.0.0.%d", 200+c.next), Hostname: fmt.Sprintf("WIN-TEST%07d", c.next), State: "running"}
			c.next++
			c.instances[name], c.userData[name] = inst, data
		}
	case http.MethodGet:
	case http.MethodDelete:
		if exists {
			delete(c.instances, name)
			c.deleted = append(c.deleted, name)
		}
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !exists && r.Method != http.MethodPut {
		http.Error(w, "no instance "+name, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(inst)
}

func (c *testCloud) deletions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.deleted...)
}

// cloudWorld starts the flavor that opts gives for the URL of a testCloud,
// for this test alone (the cloud lives as long as the control plane), and
// returns a client that knows the types of s.
func cloudWorld(t *testing.T, s *runtime.Scheme, opts func(cloudURL string) Options) (*Env, *testCloud, client.WithWatch) {
	t.Helper()
	cloud := &testCloud{instances: map[string]testInstance{}, userData: map[string][]byte{}}
	srv := httptest.NewServer(cloud)
	t.Cleanup(srv.Close)
	env, err := Start(context.Background(), opts(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs:\n%s", env.Logs(80))
		}
		_ = env.Stop()
	})
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return env, cloud, c
}

// phaseLog records each Machine's phases in the order the API server
// stored them, from a watch: what the Machine controller went through,
// which polling could miss.
type phaseLog struct {
	mu     sync.Mutex
	phases map[string][]string
}

// watchPhases watches the Machines of list's kind in namespace ns and
// records the phase that phaseOf reads from each ("" while it has none).
func watchPhases[M client.Object](t *testing.T, ctx context.Context, c client.WithWatch, list client.ObjectList, ns string, phaseOf func(M) string) *phaseLog {
	t.Helper()
	w, err := c.Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	l := &phaseLog{phases: map[string][]string{}}
	go func() {
		for ev := range w.ResultChan() {
			m, ok := ev.Object.(M)
			if !ok {
				continue
			}
			l.mu.Lock()
			seen := l.phases[m.GetName()]
			if p := phaseOf(m); p != "" && (len(seen) == 0 || seen[len(seen)-1] != p) {
				l.phases[m.GetName()] = append(seen, p)
			}
			l.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return l
}

func (l *phaseLog) of(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.phases[name], " → ")
}
