package logrotate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// clock is a settable clock for the writer.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newClock() *clock { return &clock{t: time.Date(2026, 11, 26, 20, 25, 40, 0, time.Local)} }

// contents is every byte of the log and its backups, oldest first.
func contents(t *testing.T, path string) string {
	t.Helper()
	backups, err := Backups(path)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range append(backups, path) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
	}
	return all.String()
}

func TestRotatesAtTheSizeOnLineEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubelet.log")
	c := newClock()
	w, err := Open(path, Limits{Size: 100}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range 30 {
		line := fmt.Sprintf("I1126 line %02d of the kubelet\n", i) // 29 bytes
		want.WriteString(line)
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		c.t = c.t.Add(time.Second)
	}
	w.Close()
	backups, _ := Backups(path)
	if len(backups) < 8 {
		t.Fatalf("%d backups of 870 bytes at 100 bytes each, want at least 8: %v", len(backups), backups)
	}
	for _, b := range backups {
		data, _ := os.ReadFile(b)
		if len(data) > 100 || !strings.HasSuffix(string(data), "\n") {
			t.Errorf("backup %s has %d bytes ending %q: want at most 100, ending a line", filepath.Base(b), len(data), data[max(0, len(data)-5):])
		}
		if !regexp.MustCompile(`^kubelet-20261126-\d{6}\.log$`).MatchString(filepath.Base(b)) {
			t.Errorf("backup name %s, want kubelet-<YYYYMMDD-HHMMSS>.log", filepath.Base(b))
		}
	}
	if got := contents(t, path); got != want.String() {
		t.Errorf("the log and its backups hold %q, want every line once, in order: %q", got, want.String())
	}
}

// kube-log-runner overwrites a backup when two rotations fall in one
// second; here both are kept.
func TestTwoRotationsInOneSecondKeepBoth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "csi-proxy.log")
	w, err := Open(path, Limits{Size: 10}, newClock().now)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range 5 {
		line := fmt.Sprintf("line %d...\n", i) // 11 bytes: one rotation each
		want.WriteString(line)
		w.Write([]byte(line))
	}
	w.Close()
	backups, _ := Backups(path)
	var names []string
	for _, b := range backups {
		names = append(names, filepath.Base(b))
	}
	wantNames := []string{"csi-proxy-20261126-202540.log", "csi-proxy-20261126-202540-1.log", "csi-proxy-20261126-202540-2.log", "csi-proxy-20261126-202540-3.log", "csi-proxy-20261126-202540-4.log"}
	if strings.Join(names, " ") != strings.Join(wantNames, " ") {
		t.Errorf("backups %v, want %v", names, wantNames)
	}
	if got := contents(t, path); len(got) != want.Len() {
		t.Errorf("%d bytes kept of %d written", len(got), want.Len())
	}
}

func TestALineLongerThanSlackIsCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flanneld.log")
	w, err := Open(path, Limits{Size: 1000}, newClock().now)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 3*Slack)
	if _, err := w.Write([]byte("start\n" + long + "\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	backups, _ := Backups(path)
	if len(backups) < 2 {
		t.Fatalf("a %d-byte line made %d backups; want it cut every %d bytes past the size", len(long), len(backups), Slack)
	}
	for _, b := range backups {
		if fi, _ := os.Stat(b); fi.Size() > 1000+Slack {
			t.Errorf("backup %s has %d bytes, more than the size and the slack", filepath.Base(b), fi.Size())
		}
	}
	if got := contents(t, path); got != "start\n"+long+"\n" {
		t.Errorf("%d bytes kept, want %d", len(got), len(long)+7)
	}
}

func TestOpeningAFullFileRotatesIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kube-proxy.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("old line\n", 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, Limits{Size: 100}, newClock().now)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("new\n"))
	w.Close()
	if data, _ := os.ReadFile(path); string(data) != "new\n" {
		t.Errorf("the log holds %q after opening it full; want it rotated first", data)
	}
	if b, _ := Backups(path); len(b) != 1 {
		t.Errorf("backups %v, want the old file", b)
	}
}

// Rotated copies older than the age are deleted when the log is opened and
// at each rotation, judged by their modification time against the clock;
// newer copies and other files stay.
func TestOldBackupsAreDeletedAtTheAge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubelet.log")
	c := newClock()
	write := func(name string, age time.Duration) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, c.t.Add(-age), c.t.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	write("kubelet-20261101-000000.log", 25*24*time.Hour) // older than a week
	write("kubelet-20261125-000000.log", 24*time.Hour)    // a day old
	write("other-20261101-000000.log", 25*24*time.Hour)   // another log
	write("kubelet-notes.log", 25*24*time.Hour)           // not a backup's name
	w, err := Open(path, Limits{Size: 50, Age: 168 * time.Hour}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	gone := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return os.IsNotExist(err) }
	if !gone("kubelet-20261101-000000.log") {
		t.Error("a backup 25 days old survived opening the log with a 168h age")
	}
	// Eight days later (the clock, not the wall), the day-old copy is
	// nine days old: the next rotation deletes it.
	c.t = c.t.Add(8 * 24 * time.Hour)
	w.Write([]byte(strings.Repeat("a line of the kubelet\n", 3)))
	w.Close()
	if !gone("kubelet-20261125-000000.log") {
		t.Error("a backup nine days old survived a rotation with a 168h age")
	}
	for _, kept := range []string{"other-20261101-000000.log", "kubelet-notes.log"} {
		if gone(kept) {
			t.Errorf("%s was deleted: it is not a backup of kubelet.log", kept)
		}
	}
	if b, _ := Backups(path); len(b) != 1 {
		t.Errorf("backups %v, want only the one rotated just now", b)
	}
}

func TestNoRotationWithoutASize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	w, err := Open(path, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(strings.Repeat("line\n", 10000)))
	w.Close()
	if b, _ := Backups(path); len(b) != 0 {
		t.Errorf("backups %v with size 0, want none", b)
	}
}

// A rotation Windows refuses (another program holds the file open) loses
// nothing: writing goes on in the same file, the failure is written there
// once, and the rotation is tried again a second later.
func TestAFailedRotationLosesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubelet.log")
	c := newClock()
	refused := errors.New("The process cannot access the file because it is being used by another process.")
	rename = func(string, string) error { return refused }
	t.Cleanup(func() { rename = os.Rename })
	w, err := Open(path, Limits{Size: 40}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range 6 {
		line := fmt.Sprintf("line %d of the kubelet\n", i)
		want.WriteString(line)
		w.Write([]byte(line))
	}
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "being used by another process"); n != 1 {
		t.Errorf("the failure is reported %d times in the log, want once:\n%s", n, data)
	}
	rename = os.Rename
	c.t = c.t.Add(2 * time.Second)
	w.Write([]byte("after\n"))
	want.WriteString("after\n")
	w.Close()
	got := contents(t, path)
	for _, line := range strings.SplitAfter(want.String(), "\n") {
		if !strings.Contains(got, line) {
			t.Errorf("line %q was lost", line)
		}
	}
	if b, _ := Backups(path); len(b) == 0 {
		t.Error("no rotation once renaming works again")
	}
}
