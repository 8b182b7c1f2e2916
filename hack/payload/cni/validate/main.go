// Command validate loads CNI configuration files as containerd's CRI plugin
// does, with the CNI library's own loading (libcni, at the version this
// module's CNI plugins use): a .conflist with ConfListFromBytes, a .conf
// (the form winnode writes, C:\k\cni\config\10-winnode.conf) with
// ConfFromBytes, then ConfListFromConf, which containerd's go-cni applies to
// a single configuration.
//
//	validate FILE...
//
// It prints "ok FILE" for each file that loads, each failure with the
// file's name on stderr, and exits 1 when any file failed. The Wine tier
// (hack/wine/contract.sh) runs it on every CNI configuration the renderer
// writes. libcni's loading does not depend on the operating system, so it
// runs as a Linux program.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: validate FILE...")
		os.Exit(2)
	}
	failed := false
	for _, file := range os.Args[1:] {
		if err := load(file); err != nil {
			fmt.Fprintf(os.Stderr, "cni %s: %v\n", file, err)
			failed = true
			continue
		}
		fmt.Printf("ok %s\n", file)
	}
	if failed {
		os.Exit(1)
	}
}

// load parses the file the way its name says: a list, or one network.
func load(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var list *libcni.NetworkConfigList
	if strings.HasSuffix(file, ".conflist") {
		list, err = libcni.ConfListFromBytes(data)
	} else {
		var conf *libcni.NetworkConfig
		if conf, err = libcni.ConfFromBytes(data); err == nil {
			list, err = libcni.ConfListFromConf(conf)
		}
	}
	if err != nil {
		return err
	}
	if list.Name == "" || len(list.Plugins) == 0 {
		return fmt.Errorf("no network name or no plugin (name %q, %d plugins)", list.Name, len(list.Plugins))
	}
	return nil
}
