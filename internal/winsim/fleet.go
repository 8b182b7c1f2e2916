package winsim

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// Fleet is several simulated hosts side by side, each with its own address
// and state folder.
type Fleet struct {
	Hosts []*Host
}

// StartFleet starts n hosts. Each host's state lives in
// opts.StateDir/host-<i> (i from 1); opts.IP and opts.Port must be empty
// (each host gets its own), and so must opts.Hostname unless n is 1 (one
// host may be given a name, e.g. a clone's). On failure it closes what it
// started.
func StartFleet(n int, opts Options) (*Fleet, error) {
	if n < 1 {
		return nil, fmt.Errorf("simulated fleet: want at least one host, got %d", n)
	}
	if opts.StateDir == "" {
		return nil, errors.New("simulated fleet: Options.StateDir is required")
	}
	if opts.IP != "" || opts.Port != 0 {
		return nil, errors.New("simulated fleet: leave IP and Port empty; every host gets its own")
	}
	if opts.Hostname != "" && n != 1 {
		return nil, fmt.Errorf("simulated fleet: a Hostname names one host, not %d (each host gets its own)", n)
	}
	f := &Fleet{}
	for i := 1; i <= n; i++ {
		o := opts
		o.StateDir = filepath.Join(opts.StateDir, fmt.Sprintf("host-%d", i))
		if len(opts.Builds) > 0 {
			o.Build, o.Builds = opts.Builds[(i-1)%len(opts.Builds)], nil
		}
		h, err := New(o)
		if err == nil {
			err = h.Start()
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("simulated fleet: host %d of %d: %w", i, n, err)
		}
		f.Hosts = append(f.Hosts, h)
	}
	return f, nil
}

// Close stops every host, in parallel.
func (f *Fleet) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(f.Hosts))
	for i, h := range f.Hosts {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = h.Close() }()
	}
	wg.Wait()
	return errors.Join(errs...)
}
