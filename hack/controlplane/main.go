// Command controlplane starts internal/testenv's real control plane (etcd,
// kube-apiserver, kube-controller-manager), prints the admin kubeconfig path,
// and runs until interrupted: a developer's cluster for poking around.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/winnode/winnode/internal/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		os.Exit(1)
	}
	fmt.Printf("control plane up at %s\nkubeconfig: %s\n(try: kubectl --kubeconfig %s get --raw /readyz)\nCtrl-C stops it.\n",
		env.Host, env.KubeconfigPath, env.KubeconfigPath)
	<-ctx.Done()
	fmt.Println("stopping the control plane")
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
