package plan

import (
	"fmt"
	"strings"
)

// StartOrder returns the services' names so that every service comes after
// the plan services it depends on (dependencies outside the plan are
// ignored). Ties keep the plan's order, so the result is deterministic. A
// dependency cycle is an error that names the cycle. Stop services in the
// reverse order.
func StartOrder(services []Service) ([]string, error) {
	deps := make(map[string][]string, len(services))
	names := make([]string, 0, len(services))
	for _, s := range services {
		names = append(names, s.Name)
		deps[strings.ToLower(s.Name)] = s.Dependencies
	}
	return TopoSort(names, func(n string) []string { return deps[strings.ToLower(n)] })
}

// TopoSort orders names so that each comes after its dependencies that are
// themselves among names (compared case-insensitively). Ties keep the order
// of names. A cycle is an error naming it: "a -> b -> a".
func TopoSort(names []string, dependencies func(string) []string) ([]string, error) {
	index := make(map[string]string, len(names)) // lower -> given
	for _, n := range names {
		index[strings.ToLower(n)] = n
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make(map[string]int, len(names))
	var out, stack []string
	var visit func(n string) error
	visit = func(n string) error {
		key := strings.ToLower(n)
		switch state[key] {
		case done:
			return nil
		case visiting:
			start := 0
			for i, s := range stack {
				if strings.EqualFold(s, n) {
					start = i
				}
			}
			cycle := append(append([]string(nil), stack[start:]...), n)
			return fmt.Errorf("services depend on each other in a cycle: %s", strings.Join(cycle, " -> "))
		}
		state[key] = visiting
		stack = append(stack, index[key])
		for _, d := range dependencies(index[key]) {
			if _, ok := index[strings.ToLower(d)]; !ok {
				continue
			}
			if err := visit(d); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[key] = done
		out = append(out, index[key])
		return nil
	}
	for _, n := range names {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}
