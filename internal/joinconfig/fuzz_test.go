package joinconfig

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the join config's decoder: it must
// never panic, what it accepts must pass Validate and encode back to a
// config it accepts again, and no error may show the token's secret.
func FuzzDecode(f *testing.F) {
	good, err := Encode(validConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"mode":"flannel"`), []byte(`"mode":"external"`), 1))
	f.Add(bytes.Replace(good, []byte(tokenSecret), []byte("x"), 1))
	f.Add([]byte(`{"schemaVersion":"winnode.io/join/v1"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), tokenSecret) {
				t.Fatalf("an error shows the token's secret: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted a config that fails Validate: %v", err)
		}
		again, err := Encode(c)
		if err != nil {
			t.Fatalf("accepted config does not encode: %v", err)
		}
		if _, err := Decode(bytes.NewReader(again)); err != nil {
			t.Fatalf("re-encoded config refused: %v", err)
		}
	})
}
