package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what a helper reports instead of
// failing the test that runs the helper.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestSomething" }
func (r *recorder) Errorf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// run calls f with a recorder in a goroutine of its own, as the testing
// package runs a test, so that Fatalf ends only f.
func run(f func(t testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestEventuallyReturnsOnceTrue(t *testing.T) {
	calls := 0
	r := run(func(t testing.TB) {
		Eventually(t, time.Minute, "the third call", func() (bool, string) {
			calls++
			return calls == 3, fmt.Sprint(calls)
		})
	})
	if r.failed || calls != 3 {
		t.Fatalf("failed=%v (%s) after %d calls, want success on the third", r.failed, r.msg, calls)
	}
}

func TestEventuallyFailsWithTheLastState(t *testing.T) {
	calls := 0
	r := run(func(t testing.TB) {
		Eventually(t, 3*Interval, "a condition that never holds", func() (bool, string) {
			calls++
			return false, fmt.Sprintf("call %d", calls)
		})
	})
	if !r.failed {
		t.Fatal("a condition that never held passed")
	}
	for _, want := range []string{"a condition that never holds", fmt.Sprintf("last seen: call %d", calls)} {
		if !strings.Contains(r.msg, want) {
			t.Errorf("the failure %q does not say %q", r.msg, want)
		}
	}
}

func TestGolden(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "x.golden"), []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, got string
		fails     []string // what the failure says; none: it passes
	}{
		{"x.golden", "same\n", nil},
		{"x.golden", "other\n", []string{"testdata/x.golden", "other", "same", "go test -run '^TestSomething$' -update"}},
		{"missing.golden", "same\n", []string{"testdata/missing.golden", "-update"}},
	} {
		r := run(func(t testing.TB) { Golden(t, tc.name, tc.got) })
		if r.failed != (tc.fails != nil) {
			t.Errorf("Golden(%s, %q): failed=%v (%s)", tc.name, tc.got, r.failed, r.msg)
		}
		for _, want := range tc.fails {
			if !strings.Contains(r.msg, want) {
				t.Errorf("Golden(%s, %q) says %q, without %q", tc.name, tc.got, r.msg, want)
			}
		}
	}
	// Bytes and strings alike.
	if r := run(func(t testing.TB) { Golden(t, "x.golden", []byte("same\n")) }); r.failed {
		t.Errorf("Golden with the same bytes failed: %s", r.msg)
	}
}

func TestGoldenUpdate(t *testing.T) {
	t.Chdir(t.TempDir())
	*update = true
	t.Cleanup(func() { *update = false })
	if r := run(func(t testing.TB) { Golden(t, "new.golden", "written\n") }); r.failed {
		t.Fatalf("-update failed: %s", r.msg)
	}
	if got, err := os.ReadFile(filepath.Join("testdata", "new.golden")); err != nil || string(got) != "written\n" {
		t.Fatalf("-update wrote %q, %v; want %q", got, err, "written\n")
	}
}
