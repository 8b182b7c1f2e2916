package winsim

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkg/sftp"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winsim/filestore"
)

// Hosts with a file store (Options.Store) share a program's file once it
// runs, and still behave as hosts with files of their own: the program's
// file is in use only on the host that runs it, and a host overwriting
// its copy changes no other host's.
func TestStoreSharesProgramsAndCopiesOnWrite(t *testing.T) {
	store, err := filestore.New(filepath.Join(t.TempDir(), "store"), 0)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []*testHost
	var files, children []string
	for range 2 {
		th := newTestHost(t, Options{Store: store})
		p, err := th.Path(`C:\k\helper.exe`)
		if err != nil {
			t.Fatal(err)
		}
		child, err := th.Path(`C:\k\child.exe`)
		if err != nil {
			t.Fatal(err)
		}
		// Copies of their own, as uploads leave them.
		if err := errors.Join(copyIfChanged(self, p), copyIfChanged(self, child)); err != nil {
			t.Fatal(err)
		}
		// A program named in the command line, as a service wrapper's
		// child is, is shared as the program itself.
		if _, _, code := run(t, th.dial(t), `C:\k\helper.exe json C:\k\child.exe`, ""); code != 0 {
			t.Fatalf("running the helper: exit %d", code)
		}
		hosts, files, children = append(hosts, th), append(files, p), append(children, child)
	}
	for _, pair := range [][]string{files, children} {
		fi0, err0 := os.Stat(pair[0])
		fi1, err1 := os.Stat(pair[1])
		if err0 != nil || err1 != nil || !os.SameFile(fi0, fi1) {
			t.Fatalf("the two hosts' %s are not one file after running (%v, %v)", filepath.Base(pair[0]), err0, err1)
		}
	}
	if fi0, _ := os.Stat(files[0]); os.SameFile(fi0, mustStat(t, children[0])) {
		t.Fatal("helper.exe and child.exe of one host are one file")
	}

	// Host 0 runs it as a service; host 1 does not.
	ctx := context.Background()
	if err := hosts[0].SCM().Create(ctx, helperService("svc", plan.StartManual)); err != nil {
		t.Fatal(err)
	}
	if err := hosts[0].SCM().Start(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hosts[0].SCM().Stop(ctx, "svc") })
	const inUse = "being used by another process"
	sc0, err := sftp.NewClient(hosts[0].dial(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sc0.Close()
	if _, err := sc0.Create("/C:/k/helper.exe"); err == nil || !strings.Contains(err.Error(), inUse) {
		t.Errorf("overwriting the running program on its host: %v, want %q", err, inUse)
	}
	sc1, err := sftp.NewClient(hosts[1].dial(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sc1.Close()
	f, err := sc1.Create("/C:/k/helper.exe")
	if err != nil {
		t.Fatalf("overwriting the helper on the host that does not run it: %v", err)
	}
	if _, err := f.Write([]byte("host 1's own helper")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(files[1]); string(got) != "host 1's own helper" {
		t.Errorf("host 1's helper holds %d bytes after its upload, want its own", len(got))
	}
	if got, _ := os.ReadFile(files[0]); !bytes.Equal(got, want) {
		t.Errorf("host 0's helper changed (%d bytes) when host 1 overwrote its own", len(got))
	}
	if err := sc1.Remove("/C:/k/helper.exe"); err != nil {
		t.Errorf("removing host 1's helper: %v", err)
	}
}

func mustStat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
