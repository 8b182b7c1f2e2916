package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/winnode/winnode/internal/joinconfig"
	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// openJoinLog secures winnode's folders and the join log's folder (as
// apply does: secure.go), then sends the agent's log to the join log
// (joinconfig.LogPath, appended: a second run's lines follow the first's)
// as well as to where it went. The returned function closes the log and
// puts a.Log back.
//
// The folders are secured first so that the log is written into a folder
// only administrators write: the agent runs as SYSTEM under cloudbase-init.
func (a *Agent) openJoinLog(ctx context.Context) (func(), error) {
	roots := append(slices.Clone(plan.Roots), joinconfig.LogDir)
	if err := a.secureFolders(ctx, roots, plan.DefaultStagingDir); err != nil {
		a.Log.Error("join failed", "err", err)
		return nil, err
	}
	wp, err := winpath.Parse(joinconfig.LogPath)
	if err != nil {
		return nil, plan.AsError(err, plan.ErrHost)
	}
	local, err := a.Platform.LocalPath(wp)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(local), 0o755)
	}
	var f *os.File
	if err == nil {
		f, err = os.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	}
	if err != nil {
		err = &plan.Error{Code: plan.ErrHost, File: joinconfig.LogPath, Message: fmt.Sprintf("opening the join log: %v", err)}
		a.Log.Error("join failed", "err", err)
		return nil, err
	}
	before := a.Log
	a.Log = slog.New(slog.NewMultiHandler(before.Handler(), slog.NewTextHandler(f, nil))).With("command", "join")
	a.Log.Info("winnode-agent join started", "agentVersion", a.Version, "log", joinconfig.LogPath)
	return func() {
		a.Log = before
		f.Close()
	}, nil
}
