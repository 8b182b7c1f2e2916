package agent

import "context"

// stopChanged stops the services decideServices marked, each after the
// services that depend on it (Windows refuses to stop a service others
// depend on), and remembers every service it stopped, to start it again.
func (r *applyRun) stopChanged(ctx context.Context) error {
	done := map[string]bool{}
	for i := len(r.toStop) - 1; i >= 0; i-- {
		name := r.toStop[i]
		r.a.Log.Info("service changes", "service", name, "why", r.decisions[lower(name)].why)
		more, err := r.a.stopTree(ctx, name, done)
		r.stopped = append(r.stopped, more...)
		if err != nil {
			return err
		}
	}
	return nil
}
