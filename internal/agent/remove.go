package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/winnode/winnode/internal/plan"
)

// Remove undoes every plan the agent applied: it stops and deletes the
// services (dependents first), removes the Defender exclusions and root
// certificates it added, closes the firewall ports, deletes the files,
// the staging folder and the plan's folders, and finally its own state.
// Folders marked as logs are kept unless purgeLogs. It is safe to run twice
// and on a host never configured (nothing to do). It deletes only paths in
// winnode's folders (plan.Roots) and services marked as winnode's, and
// nothing at all when the state fails validation (ErrStateInvalid).
func (a *Agent) Remove(ctx context.Context, purgeLogs bool) (*plan.Result, error) {
	res := newResult("remove", "")
	// Before the lock and the state file: they live in a root (secure.go).
	if err := a.secureFolders(ctx, plan.Roots, ""); err != nil {
		return res, err
	}
	unlock, err := a.lock()
	if err != nil {
		return res, err
	}
	lockPath, _ := a.Platform.LocalPath(StateDir.Join(lockFile))
	defer func() {
		// The state folder goes last, once the lock is released (Windows
		// cannot delete an open file). Best effort: another agent may
		// already hold a new lock.
		unlock()
		if err := os.Remove(lockPath); err == nil {
			os.Remove(filepath.Dir(lockPath))
		}
	}()
	st, err := a.loadState()
	var invalid *StateInvalidError
	if errors.As(err, &invalid) {
		// Without a trusted record of what winnode installed, remove
		// deletes nothing; an apply (the operator's) records a fresh one.
		return res, &plan.Error{Code: plan.ErrStateInvalid, File: StateDir.Join(stateFile).String(), Message: fmt.Sprintf(
			"%s: %s; nothing was deleted. Look at the file (did something other than winnode write it?), then configure the host again "+
				"(apply replaces it) and remove, or delete the file and winnode's services by hand", invalid.Field, invalid.Reason)}
	}
	if err != nil {
		return res, plan.AsError(err, plan.ErrHost)
	}
	plans := st.plans()
	if err := a.removeAllServices(ctx, plans, res); err != nil {
		return res, err
	}
	// What the agent added to Windows' own settings, and only that.
	save := func() error { return a.saveState(st) }
	none := func(string) bool { return false }
	if err := a.dropDefenderExclusions(ctx, st, none, save); err != nil {
		return res, err
	}
	if err := a.dropRootCertificates(ctx, st, none, save); err != nil {
		return res, err
	}
	for _, p := range plans {
		for _, fw := range p.FirewallPorts {
			if err := a.closeFirewallPort(ctx, fw); err != nil {
				return res, err
			}
		}
	}
	if err := a.removeFilesAndFolders(plans, purgeLogs, res); err != nil {
		return res, err
	}
	return res, a.removeState(lockPath)
}

// removeAllServices stops and deletes the services of every plan.
func (a *Agent) removeAllServices(ctx context.Context, plans []*plan.Plan, res *plan.Result) error {
	var services []plan.Service
	seen := map[string]bool{}
	for _, p := range plans {
		for _, s := range p.Services {
			if !seen[lower(s.Name)] {
				seen[lower(s.Name)] = true
				services = append(services, s)
			}
		}
	}
	removed, err := a.deleteServices(ctx, services, res)
	for _, name := range removed {
		res.Services = append(res.Services, plan.ServiceResult{Name: name, Action: plan.ServiceRemoved})
	}
	return err
}

// removeFilesAndFolders deletes the plans' files, plan by plan, then their
// folders and staging folders, deepest first, keeping log folders (unless
// purgeLogs) and the running agent.
func (a *Agent) removeFilesAndFolders(plans []*plan.Plan, purgeLogs bool, res *plan.Result) error {
	var keep []string // local paths kept with everything under them
	var dirs []string // Windows paths of folders to delete
	files := map[string]bool{}
	for _, p := range plans {
		if err := a.removePlanFiles(p, files, res); err != nil {
			return err
		}
		dirs = append(dirs, p.Staging())
		for _, d := range p.Directories {
			if d.Logs && !purgeLogs {
				if !plan.Within(d.Path, a.roots()) {
					continue // not deleted anyway
				}
				local, err := a.localPath(d.Path)
				if err != nil {
					return err
				}
				keep = append(keep, local)
				continue
			}
			dirs = append(dirs, d.Path)
		}
	}
	if self, err := os.Executable(); err == nil {
		keep = append(keep, self) // Windows cannot delete a running program
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if !a.inWinnodeFolders(d, a.roots(), res) {
			continue
		}
		local, err := a.localPath(d)
		if err != nil {
			return err
		}
		if err := a.retryFile(func() error { return removeTree(local, keep) }); err != nil {
			return &plan.Error{Code: plan.ErrFileInstall, File: d, Message: fmt.Sprintf("deleting the folder: %v", err)}
		}
	}
	return nil
}

// removePlanFiles deletes the files of one plan, and those its services
// wrote (planPaths), not deleted already (done, by lower-case path), except
// the running agent.
func (a *Agent) removePlanFiles(p *plan.Plan, done map[string]bool, res *plan.Result) error {
	for _, path := range planPaths(p) {
		if done[lower(path)] {
			continue
		}
		done[lower(path)] = true
		if !a.inWinnodeFolders(path, a.roots(), res) {
			continue
		}
		if local, err := a.localPath(path); err == nil && isSelf(local) {
			a.Log.Info("keeping the running agent; delete it once it has exited", "file", path)
			continue
		}
		if err := a.removeFile(path); err != nil {
			return err
		}
		res.Files = append(res.Files, plan.FileResult{Path: path, Action: plan.FileRemoved})
	}
	return nil
}

// removeState deletes the agent's state folder, except the lock file (still
// held; Remove deletes it last).
func (a *Agent) removeState(lockPath string) error {
	stateDir, err := a.Platform.LocalPath(StateDir)
	if err == nil {
		err = removeTree(stateDir, []string{lockPath})
	}
	if err != nil {
		return &plan.Error{Code: plan.ErrHost, File: StateDir.String(), Message: fmt.Sprintf("deleting the agent's state: %v", err)}
	}
	return nil
}

// removeTree deletes dir and everything in it except the paths in keep (and
// the folders leading to them). A missing dir is not an error.
func removeTree(dir string, keep []string) error {
	for _, k := range keep {
		if samePath(k, dir) {
			return nil
		}
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() {
			if err := removeTree(path, keep); err != nil {
				return err
			}
			continue
		}
		if slicesContainsPath(keep, path) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		if rest, _ := os.ReadDir(dir); len(rest) > 0 {
			return nil // holds something kept
		}
		return err
	}
	return nil
}

func slicesContainsPath(list []string, p string) bool {
	for _, k := range list {
		if samePath(k, p) {
			return true
		}
	}
	return false
}

// samePath compares local paths as the host's filesystem does (Windows and
// the simulated one are case-insensitive).
func samePath(a, b string) bool {
	return strings.EqualFold(filepath.Clean(a), filepath.Clean(b))
}
