// Command winsim-standin is one Linux program standing in, on simulated
// Windows hosts (winsim), for kubelet.exe, kube-proxy.exe and containerd.exe:
// it acts as the program whose name it was started under (argv[0]'s base
// name, case-insensitive, ".exe" stripped). It is a simulation and says so
// in its logs; see internal/winsim/standin.
package main

import (
	"os"

	"github.com/winnode/winnode/internal/winsim/standin"
)

func main() {
	os.Exit(standin.Main(os.Args[0], os.Args[1:]))
}
