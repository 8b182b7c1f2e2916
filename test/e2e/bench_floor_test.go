package e2e

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winsim"
)

// floorDir is where the floor's bare client writes on each host.
const floorDir = `C:\bench-floor`

// pushFloor is the floor beside winnode's time to Ready: the payload's
// files pushed over SFTP to every host at once by a bare client
// (golang.org/x/crypto/ssh and github.com/pkg/sftp, with the same
// concurrent writes winnode's sync uses) with no winnode logic: no agent,
// no hashing, no plan, no Node. It sends the bytes winnode sends: each
// content once (winnode's sync stages by hash), compressed where the
// payload has a compressed copy. It returns the time until the last host has
// every file, and removes them afterwards.
func pushFloor(b *testing.B, w *world, p *benchPayload, hosts []*winsim.Host) time.Duration {
	b.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(hosts))
	for i, h := range hosts {
		wg.Go(func() { errs[i] = pushTo(w, p, h) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("the floor's bare SFTP push: %v", err)
	}
	elapsed := time.Since(start)
	for _, h := range hosts {
		if dir, err := h.Path(floorDir); err == nil {
			_ = os.RemoveAll(dir)
		}
	}
	return elapsed
}

func pushTo(w *world, p *benchPayload, h *winsim.Host) error {
	cfg := &ssh.ClientConfig{
		User: h.User(),
		Auth: []ssh.AuthMethod{ssh.PublicKeys(w.signer)},
		// A benchmark's own simulated host, just started: nothing to pin.
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Timeout:         30 * time.Second,
	}
	conn, err := ssh.Dial("tcp", net.JoinHostPort(h.IP(), strconv.Itoa(h.Port())), cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", h.Hostname(), err)
	}
	defer conn.Close()
	sc, err := sftp.NewClient(conn, sftp.UseConcurrentWrites(true), sftp.MaxConcurrentRequestsPerFile(64))
	if err != nil {
		return fmt.Errorf("%s: sftp: %w", h.Hostname(), err)
	}
	defer sc.Close()
	remote := "/C:/bench-floor"
	if err := sc.MkdirAll(remote); err != nil {
		return fmt.Errorf("%s: %w", h.Hostname(), err)
	}
	sent := map[string]bool{}
	for _, f := range p.m.Files {
		if sent[f.SHA256] {
			continue // winnode's sync sends each content once too
		}
		sent[f.SHA256] = true
		// The bytes winnode's sync sends: a file's compressed copy where
		// the payload has one (except the agent, which goes as it is).
		name := f.Name
		if enc := f.EncodedName(); enc != "" && f.Name != plan.PayloadAgent {
			name = enc
		}
		if err := pushFile(sc, filepath.Join(p.dir, name), remote+"/"+name); err != nil {
			return fmt.Errorf("%s: %s: %w", h.Hostname(), name, err)
		}
	}
	return nil
}

func pushFile(sc *sftp.Client, local, remote string) error {
	src, err := os.Open(local)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := sc.Create(remote)
	if err != nil {
		return err
	}
	if _, err := dst.ReadFromWithConcurrency(src, 0); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// hostCounters is each host's SSH counters now.
func hostCounters(hosts []*winsim.Host) []winsim.Counters {
	out := make([]winsim.Counters, len(hosts))
	for i, h := range hosts {
		out[i] = h.Counters()
	}
	return out
}
