package plan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// ChangedServices predicts, from what a host reports of its installed plan,
// which services applying next will create, reconfigure, restart or delete:
// a service whose definition differs from the installed one, or one of whose
// files (binary or Uses) changes, the services that depend on it (Windows
// stops dependents first), and every installed service next drops. When the
// installed plan is unknown, incomplete or of another cluster, every service
// of next is named: the apply may touch any of them.
//
// The operator uses it to decide whether an upgrade disturbs the node (and
// so must be drained, one node at a time) or only rewrites files no running
// service reads. The agent decides for itself from the services as Windows
// has them, so the prediction errs on the side of naming too many.
func ChangedServices(installed *InstalledPlan, next *Plan) []string {
	all := func() []string {
		var names []string
		for _, s := range next.Services {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		return names
	}
	if installed == nil || !installed.Complete || len(installed.Services) == 0 {
		return all()
	}
	if installed.Cluster != next.Cluster {
		return all()
	}
	old := &Plan{Services: installed.Services}
	want := map[string]string{}
	for _, f := range next.Files {
		want[strings.ToLower(f.Path)] = f.SHA256
	}
	have := map[string]string{}
	for p, sum := range installed.Files {
		have[strings.ToLower(p)] = sum
	}

	changed := map[string]bool{}
	for _, s := range next.Services {
		prev, ok := old.Service(s.Name)
		if !ok || !sameService(*prev, s) {
			changed[strings.ToLower(s.Name)] = true
			continue
		}
		for _, f := range s.Files() {
			if sum := want[strings.ToLower(f)]; sum == "" || have[strings.ToLower(f)] != sum {
				changed[strings.ToLower(s.Name)] = true
				break
			}
		}
	}
	// Dependents of a changed service are stopped and started with it.
	for grew := true; grew; {
		grew = false
		for _, s := range next.Services {
			if changed[strings.ToLower(s.Name)] {
				continue
			}
			for _, d := range s.Dependencies {
				if changed[strings.ToLower(d)] {
					changed[strings.ToLower(s.Name)] = true
					grew = true
					break
				}
			}
		}
	}

	var names []string
	for _, s := range next.Services {
		if changed[strings.ToLower(s.Name)] {
			names = append(names, s.Name)
		}
	}
	for _, s := range installed.Services {
		if _, kept := next.Service(s.Name); !kept {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names
}

// sameService compares two definitions as the agent records them: in JSON
// (where an empty list and no list are the same), with Decode's defaults.
func sameService(a, b Service) bool {
	for _, s := range []*Service{&a, &b} {
		if s.Description == "" {
			s.Description = ServiceDescription
		}
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
