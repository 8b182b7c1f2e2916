package agent

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/winnode/winnode/internal/plan"
)

// The state file is outside input: whatever its bytes, decodeState either
// refuses them with a StateInvalidError or returns a state whose plans pass
// plan.Validate and whose encoding decodes again to the same state.
func FuzzDecodeState(f *testing.F) {
	if seed, err := os.ReadFile("../plan/testdata/plan.json"); err == nil {
		f.Add([]byte(`{"schemaVersion":"winnode.io/v1","applied":` + string(seed) + `,"manifest":{}}`))
	}
	f.Add([]byte(`{"schemaVersion":"winnode.io/v1","manifest":{"C:\\k\\a":"` + strings.Repeat("0", 64) + `"}}`))
	f.Add([]byte(`{"schemaVersion":"winnode.io/v1","pending":{"schemaVersion":"winnode.io/v1","version":"v","files":[{"path":"C:\\k\\..\\Windows\\x","sha256":"` + strings.Repeat("a", 64) + `"}]}}`))
	f.Add([]byte(`{"schemaVersion":"winnode.io/v2"}`))
	f.Add([]byte(`{"schemaVersion":"winnode.io/v1"} {}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeState(data)
		if err != nil {
			var invalid *StateInvalidError
			if !errors.As(err, &invalid) || invalid.Field == "" || !strings.Contains(err.Error(), `C:\ProgramData\winnode\state.json`) {
				t.Fatalf("refused without naming the file and the field: %v", err)
			}
			return
		}
		for _, p := range st.plans() {
			if err := p.Validate(); err != nil {
				t.Fatalf("accepted a state whose plan fails validation: %v", err)
			}
		}
		again, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		st2, err := decodeState(again)
		if err != nil {
			t.Fatalf("an accepted state does not decode again: %v\n%s", err, again)
		}
		if again2, _ := json.Marshal(st2); string(again2) != string(again) {
			t.Fatalf("decoding is not stable:\n%s\n%s", again, again2)
		}
	})
}

func TestDecodeStateNamesTheField(t *testing.T) {
	sum := strings.Repeat("a", 64)
	for doc, field := range map[string]string{
		`{"schemaVersion":"winnode.io/v1","manifest":{}} x`:                                                                           "(file)",
		`{"schemaVersion":"winnode.io/v0","manifest":{}}`:                                                                             "schemaVersion",
		`{"schemaVersion":"winnode.io/v1","manifest":{"C:/k/a":"` + sum + `"}}`:                                                       `manifest["C:/k/a"]`,
		`{"schemaVersion":"winnode.io/v1","manifest":{"C:\\k\\a":"nope"}}`:                                                            `manifest["C:\\k\\a"]`,
		`{"schemaVersion":"winnode.io/v1","applied":{"schemaVersion":"winnode.io/v1"}}`:                                               "applied",
		`{"schemaVersion":"winnode.io/v1","pending":{"schemaVersion":"winnode.io/v1","x":1}}`:                                         "(file)",
		`{"schemaVersion":"winnode.io/v1","pending":{"schemaVersion":"winnode.io/v1","version":"v","directories":[{"path":"C:\\"}]}}`: "pending",
	} {
		_, err := decodeState([]byte(doc))
		var invalid *StateInvalidError
		if !errors.As(err, &invalid) || invalid.Field != field {
			t.Errorf("%s: %v, want the field %s named", doc, err, field)
		}
	}
	st, err := decodeState([]byte(`{"schemaVersion":"winnode.io/v1"}`))
	if err != nil || st.Manifest == nil {
		t.Errorf("a state with no plan: %+v %v", st, err)
	}
	if plan.SchemaVersion != "winnode.io/v1" {
		t.Log("update the documents above to the new schema version")
	}
}
