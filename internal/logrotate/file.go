package logrotate

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Slack is how far past its size a file may grow while the writer waits
// for a line to end; beyond it the file is cut inside the line.
const Slack = 64 << 10

// File is a log file being written: appended to, rotated once it reaches
// Limits.Size (at a line end), and cleared of rotated copies older than
// Limits.Age when opened and at each rotation. Safe for concurrent use.
type File struct {
	path   string
	limits Limits
	now    func() time.Time

	mu      sync.Mutex
	f       *os.File
	size    int64
	failing error     // the last rotation's failure, reported once
	retryAt time.Time // no rotation before: one failed
	// lineOpen: the last byte written is not a line end.
	lineOpen bool
}

// Open opens (creating it and its folder if missing) the log file at path,
// a local path, for appending. now is the clock (nil: time.Now); tests
// give another. A file already at its size is rotated first.
func Open(path string, limits Limits, now func() time.Time) (*File, error) {
	if err := limits.Check(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("log file %s: %w", path, err)
	}
	w := &File{path: path, limits: limits, now: now}
	if err := w.open(); err != nil {
		return nil, err
	}
	if limits.Size > 0 && w.size >= limits.Size {
		w.rotate()
	}
	w.deleteOld()
	return w, nil
}

func (w *File) open() error {
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("log file %s: %w", w.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("log file %s: %w", w.path, err)
	}
	w.f, w.size = f, fi.Size()
	return nil
}

// Write appends p. When the file reaches its size, the part of p up to the
// last line end that fits is written, the file rotated, and the rest goes
// to the new file; a line that does not fit finishes in the old file,
// unless it runs on past Slack.
func (w *File) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	written := 0
	for len(p) > 0 {
		n, rotate := w.cut(p)
		m, err := w.f.Write(p[:n])
		w.size += int64(m)
		written += m
		if err != nil {
			return written, fmt.Errorf("log file %s: %w", w.path, err)
		}
		if m > 0 {
			w.lineOpen = p[m-1] != '\n'
		}
		p = p[n:]
		if rotate {
			w.rotate()
		}
	}
	return written, nil
}

// cut is how much of p goes into the current file, and whether the file
// is rotated after it: all of p while it stays below the size; else up to
// the last line end that fits; else, when the file ends a line, nothing
// (rotate first); else (a line is open) up to the first line end, or up to
// Slack past the size, or all of p while the line goes on below that. A
// file with nothing in it takes a line longer than the size whole.
func (w *File) cut(p []byte) (int, bool) {
	if w.limits.Size == 0 || w.size+int64(len(p)) < w.limits.Size || w.now().Before(w.retryAt) {
		return len(p), false
	}
	if room := w.limits.Size - w.size; room > 0 {
		if i := bytes.LastIndexByte(p[:min(room, int64(len(p)))], '\n'); i >= 0 {
			return i + 1, true
		}
	}
	if !w.lineOpen && w.size > 0 {
		return 0, true
	}
	allowed := w.limits.Size + Slack - w.size
	if i := bytes.IndexByte(p, '\n'); i >= 0 && int64(i) < allowed {
		return i + 1, true
	}
	if int64(len(p)) < allowed {
		return len(p), false
	}
	return int(max(allowed, 1)), true
}

// rotate renames the file to its backup name and opens a new one. A
// failed rename leaves the file as it is (writing goes on there; the next
// write tries again) and is reported once, in the file itself.
func (w *File) rotate() {
	backup := w.backupName()
	if err := w.f.Close(); err != nil {
		w.report(err)
	}
	renameErr := rename(w.path, backup)
	if err := w.open(); err != nil {
		// The folder or file went away: nothing more can be logged.
		w.f, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		return
	}
	if renameErr != nil {
		w.retryAt = w.now().Add(time.Second)
		w.report(fmt.Errorf("rotating %s to %s: %w (writing on in the same file; it is tried again at the next write)", w.path, filepath.Base(backup), renameErr))
		return
	}
	w.failing, w.lineOpen = nil, false
	// The copy was last written now, by this writer's clock (the same as
	// the file system's, except in tests).
	_ = os.Chtimes(backup, w.now(), w.now())
	w.deleteOld()
}

// report writes a rotation failure into the log, once until one succeeds.
func (w *File) report(err error) {
	if w.failing != nil && w.failing.Error() == err.Error() {
		return
	}
	w.failing = err
	n, _ := fmt.Fprintf(w.f, "%s logrotate: %v\n", w.now().UTC().Format(time.RFC3339), err)
	w.size += int64(n)
}

// backupName is where a rotation at the clock's time moves the file:
// <stem>-<YYYYMMDD-HHMMSS><ext>, or with -1, -2, ... when that name is
// taken (a second rotation within the same second).
func (w *File) backupName() string {
	dir, stem, ext := split(w.path)
	base := filepath.Join(dir, stem+"-"+w.now().Format(timeLayout))
	name := base + ext
	for i := 1; exists(name); i++ {
		name = fmt.Sprintf("%s-%d%s", base, i, ext)
	}
	return name
}

const timeLayout = "20060102-150405"

// rename is os.Rename; a test makes it fail as Windows does for a file
// another program holds open.
var rename = os.Rename

func split(path string) (dir, stem, ext string) {
	dir, base := filepath.Split(path)
	ext = filepath.Ext(base)
	return dir, strings.TrimSuffix(base, ext), ext
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, os.ErrNotExist)
}

// Backups are the rotated copies of the log at path, oldest first: by the
// time in their name, then by the number a second rotation within the same
// second adds.
func Backups(path string) ([]string, error) {
	dir, stem, ext := split(path)
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(stem) + `-(\d{8}-\d{6})(?:-(\d+))?` + regexp.QuoteMeta(ext) + `$`)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type backup struct {
		path, when string
		n          int
	}
	var found []backup
	for _, e := range entries {
		m := re.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		n, _ := strconv.Atoi(m[2]) // "" (the first of its second) is 0
		found = append(found, backup{filepath.Join(dir, e.Name()), m[1], n})
	}
	slices.SortFunc(found, func(a, b backup) int {
		return cmp.Or(strings.Compare(a.when, b.when), cmp.Compare(a.n, b.n))
	})
	out := make([]string, len(found))
	for i, b := range found {
		out[i] = b.path
	}
	return out, nil
}

// deleteOld deletes rotated copies last written before the age limit.
func (w *File) deleteOld() {
	if w.limits.Age == 0 {
		return
	}
	backups, err := Backups(w.path)
	if err != nil {
		return
	}
	cutoff := w.now().Add(-w.limits.Age)
	for _, b := range backups {
		if fi, err := os.Stat(b); err == nil && fi.ModTime().Before(cutoff) {
			if err := os.Remove(b); err != nil {
				w.report(fmt.Errorf("deleting %s, older than %s: %w", filepath.Base(b), w.limits.Age, err))
			}
		}
	}
}

// Close closes the file.
func (w *File) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}
