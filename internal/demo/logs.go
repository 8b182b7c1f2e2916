//go:build linux

package demo

import (
	"io"
	"log/slog"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The libraries the demo runs in its process log through process-wide
// loggers: controller-runtime (envtest's CRD install in internal/testenv,
// the parts of the operator's manager) and client-go (klog). Left alone,
// klog writes to the terminal, and controller-runtime prints
// "log.SetLogger(...) was never called" with a goroutine stack trace on the
// first line logged 30 s after the process started, which on a first run
// is the control plane's start. The demo sends both to its operator.log
// instead, from its first moment.
//
// controller-runtime takes the first logger it is given for the life of
// the process, and tests run several demos in one process: so the loggers
// are set once, to libraryLog, which each demo points at its own log file
// while it runs.

// logSwitch is an io.Writer whose target changes; with none, lines are
// dropped.
type logSwitch struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *logSwitch) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

func (s *logSwitch) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

var (
	libraryLog       logSwitch
	setLibraryLogger sync.Once
)

// routeLibraryLogs sends controller-runtime's and klog's lines to w (nil:
// nowhere) until it is called again.
func routeLibraryLogs(w io.Writer) {
	setLibraryLogger.Do(func() {
		logger := logr.FromSlogHandler(slog.NewTextHandler(&libraryLog, nil))
		ctrl.SetLogger(logger)
		klog.SetLogger(logger)
	})
	libraryLog.set(w)
}
