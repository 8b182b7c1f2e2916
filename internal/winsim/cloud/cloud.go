// Package cloud is a simulated infrastructure provider: an HTTP API that
// boots one simulated Windows host (internal/winsim) per instance, runs the
// instance's user data at boot as a cloud's launch agent does, and powers
// the host off when the instance is deleted. The test world's Machine API
// and Cluster API programs (hack/tools/openshift/machineapi,
// hack/tools/capi/capiworld, each with a "winsim" provider) are its
// clients, as a cloud provider's actuator is a client of its cloud's API.
//
// The API and its types are defined once, in the stdlib-only module
// hack/tools/winsimcloud (its wire.go), whose Client both programs use:
// this package serves those types, so the server and the client cannot
// disagree on them (TestClientContract runs that client against this
// server).
package cloud

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/winnode/winnode/hack/tools/winsimcloud"
	"github.com/winnode/winnode/internal/winsim"
)

// Instance is one simulated cloud instance, as the API reports it.
type Instance = winsimcloud.Instance

// ProviderIDPrefix starts every instance's provider ID.
const ProviderIDPrefix = winsimcloud.ProviderIDPrefix

// Options configure a Cloud.
type Options struct {
	// NewHost creates (without starting) the simulated host of a new
	// instance; the caller chooses its state folder, stand-ins and logger.
	// The cloud runs the user data on it, then starts it.
	NewHost func(name string) (*winsim.Host, error)
	// PowerOff, when set, is called with an instance's host just before
	// the host is powered off (tests look at what was left on it).
	PowerOff func(name string, h *winsim.Host)
	// Logger receives the cloud's log lines. Default slog.Default().
	Logger *slog.Logger
}

// Cloud is the simulated provider's state: its instances and their hosts.
type Cloud struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	instances map[string]*entry
	images    map[string]string // name → folder
	// misreport holds, per instance name prefix, the addresses the next
	// instances of that prefix report instead of their hosts' own
	// (MisreportAddresses).
	misreport map[string][]string
}

type entry struct {
	inst Instance
	host *winsim.Host
}

// New is a cloud with no instances.
func New(opts Options) *Cloud {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Cloud{opts: opts, log: opts.Logger.With("simulated", "cloud"), instances: map[string]*entry{}, images: map[string]string{}, misreport: map[string][]string{}}
}

// MisreportAddresses makes the next len(addresses) instances created whose
// name starts with prefix report, in turn, one of addresses as theirs
// instead of their host's own: a provider that puts a wrong address into a
// Machine's status.addresses, as a real one can (a misconfigured network,
// a metadata service answering for another interface). Each host still
// runs at its own address, where nobody is told to look for it.
func (c *Cloud) MisreportAddresses(prefix string, addresses ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.misreport[prefix] = append(c.misreport[prefix], addresses...)
}

// reportedAddress is the address instance name reports: the next
// misreported one of a prefix of name (MisreportAddresses), else its
// host's own, ip. c.mu is held.
func (c *Cloud) reportedAddress(name, ip string) string {
	for prefix, addrs := range c.misreport {
		if strings.HasPrefix(name, prefix) && len(addrs) > 0 {
			c.misreport[prefix] = addrs[1:]
			c.log.Warn("simulated cloud: reporting an address that is not the host's", "instance", name, "reported", addrs[0], "host", ip)
			return addrs[0]
		}
	}
	return ip
}

// AddImage makes the image folder dir (what `winnodectl image` writes:
// dir/C goes onto the host's C:\) bootable as name. An image of that name
// is replaced; instances booted from it keep what they have.
func (c *Cloud) AddImage(name, dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.images[name] = dir
	c.log.Info("simulated cloud: image added", "image", name, "folder", dir)
}

// ErrNoImage is Create's answer for an image the cloud does not know.
var ErrNoImage = errors.New("no such image")

// Create boots the instance name from image ("" for the plain Windows
// Server image, which carries no winnode) with userData, or returns the
// existing instance of that name as it is.
func (c *Cloud) Create(name, image string, userData []byte) (Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.instances[name]; ok {
		return e.inst, nil
	}
	dir, ok := c.images[image]
	if image != "" && !ok {
		return Instance{}, fmt.Errorf("instance %s: image %q: %w", name, image, ErrNoImage)
	}
	h, err := c.opts.NewHost(name)
	if err != nil {
		return Instance{}, fmt.Errorf("instance %s: creating its host: %w", name, err)
	}
	if image != "" {
		if err := h.InstallImage(dir); err != nil {
			_ = h.Close()
			return Instance{}, fmt.Errorf("instance %s: %w", name, err)
		}
	}
	if err := h.RunUserData(userData); err != nil {
		_ = h.Close()
		return Instance{}, fmt.Errorf("instance %s: %w", name, err)
	}
	if err := h.Start(); err != nil {
		_ = h.Close()
		return Instance{}, fmt.Errorf("instance %s: booting its host: %w", name, err)
	}
	id := newID()
	inst := Instance{Name: name, ID: id, ProviderID: ProviderIDPrefix + id, Address: c.reportedAddress(name, h.IP()), Hostname: h.Hostname(), State: winsimcloud.StateRunning}
	c.instances[name] = &entry{inst: inst, host: h}
	c.log.Info("simulated cloud: instance running", "instance", name, "image", image, "id", id, "address", inst.Address, "hostname", inst.Hostname)
	return inst, nil
}

// Get reports the instance name; false when there is none.
func (c *Cloud) Get(name string) (Instance, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.instances[name]
	if !ok {
		return Instance{}, false
	}
	return e.inst, true
}

// Delete powers the instance's host off and forgets it; false when there
// was no such instance.
func (c *Cloud) Delete(name string) (bool, error) {
	c.mu.Lock()
	e, ok := c.instances[name]
	delete(c.instances, name)
	c.mu.Unlock()
	if !ok {
		return false, nil
	}
	c.log.Info("simulated cloud: powering instance off", "instance", name, "id", e.inst.ID)
	if c.opts.PowerOff != nil {
		c.opts.PowerOff(name, e.host)
	}
	if err := e.host.Close(); err != nil {
		return true, fmt.Errorf("instance %s: powering its host off: %w", name, err)
	}
	return true, nil
}

// Host is the simulated host of instance name (nil when there is none),
// for tests to look inside.
func (c *Cloud) Host(name string) *winsim.Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.instances[name]; ok {
		return e.host
	}
	return nil
}

// Names are the instances' names, sorted.
func (c *Cloud) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.instances))
	for n := range c.instances {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Close powers every instance off.
func (c *Cloud) Close() error {
	var first error
	for _, n := range c.Names() {
		if _, err := c.Delete(n); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// newID is an EC2-style instance ID.
func newID() string {
	b := make([]byte, 9)
	_, _ = rand.Read(b)
	return "i-" + hex.EncodeToString(b)[:17]
}
