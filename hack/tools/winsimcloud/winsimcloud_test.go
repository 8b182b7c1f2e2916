package winsimcloud

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The client's handling of answers: an instance decoded from a 2xx answer, a
// 404 as ErrNoInstance (and as success for a Delete), another status as an
// error. That it speaks the API as the cloud serves it is tested against
// the cloud itself (internal/winsim/cloud's TestClientContract).
func TestClient(t *testing.T) {
	var gotUserData []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/instances/a":
			var req CreateRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			gotUserData = req.UserData
			_ = json.NewEncoder(w).Encode(Instance{Name: "a", ID: "i-1", ProviderID: ProviderIDPrefix + "i-1", State: StateRunning})
		case r.URL.Path == "/instances/gone":
			http.Error(w, "no instance gone", http.StatusNotFound)
		default:
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inst, err := c.Create(ctx, "a", []byte("user data"))
	if err != nil || inst.ProviderID != "winsim:///i-1" || string(gotUserData) != "user data" {
		t.Errorf("Create: %+v, %v; the cloud got user data %q", inst, err, gotUserData)
	}
	if _, err := c.Get(ctx, "gone"); !errors.Is(err, ErrNoInstance) {
		t.Errorf("Get of a missing instance: %v, want ErrNoInstance", err)
	}
	if err := c.Delete(ctx, "gone"); err != nil {
		t.Errorf("Delete of a missing instance: %v, want none", err)
	}
	if _, err := c.Get(ctx, "other"); err == nil || errors.Is(err, ErrNoInstance) {
		t.Errorf("Get answered 500: %v, want an error other than ErrNoInstance", err)
	}
	if _, err := New("127.0.0.1:80"); err == nil {
		t.Error("New accepted a URL without a scheme")
	}
}
