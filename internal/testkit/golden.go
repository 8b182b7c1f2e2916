package testkit

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the module's one -update flag: `go test ./internal/x -run
// TestY -update` rewrites the golden files TestY compares with.
var update = flag.Bool("update", false, "rewrite the golden files (testdata/NAME) from the current output")

// Golden compares got with the file testdata/name of the package under
// test, or writes got there when the test runs with -update. A missing or
// different file fails the test with both contents and the command that
// rewrites it.
func Golden[T ~string | ~[]byte](t testing.TB, name string, got T) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	rerun := "go test -run '^" + t.Name() + "$' -update"
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file %s (%s in this package creates it): %v", path, rerun, err)
	}
	if string(got) != string(want) {
		t.Errorf("output differs from the golden file %s (%s rewrites it if the change is intended):\n--- got\n%s\n--- want\n%s", path, rerun, got, want)
	}
}
