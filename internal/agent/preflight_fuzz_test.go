package agent

import (
	"bytes"
	"testing"
)

// FuzzReadPreflightRequest: whatever stdin holds, reading the pre-flight
// request gives a request or an error, never a panic.
func FuzzReadPreflightRequest(f *testing.F) {
	f.Add([]byte(`{"apiServer":"https://10.0.0.1:6443","caData":"LS0t","minFreeGiB":30,"listedByIP":true,"address":"10.0.0.7"}`))
	f.Add([]byte(`{not json`))
	f.Add([]byte(``))
	f.Add([]byte(`{"minFreeGiB":-1,"caData":"%%%"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ReadPreflightRequest(bytes.NewReader(data))
		if (req == nil) == (err == nil) {
			t.Fatalf("ReadPreflightRequest(%q) = %v, %v: want a request or an error", data, req, err)
		}
	})
}
