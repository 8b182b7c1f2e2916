// Command validate loads configuration files with the kubelet's and
// kube-proxy's own code, at the Kubernetes version of the payload (this
// module's k8s.io/kubernetes), and validates them as those programs do
// before they start:
//
//	validate kubelet FILE...      KubeletConfiguration
//	validate kube-proxy FILE...   KubeProxyConfiguration
//
// Both validations have rules of their own for Windows, chosen by the
// operating system the program runs on (the kubelet's validation_windows.go;
// kube-proxy's validateProxyMode reads runtime.GOOS), so the Wine tier
// (hack/wine/contract.sh) builds this program for Windows and runs it under
// Wine. Decoding is strict: a field the type does not have fails, where the
// programs themselves fall back to a lenient decoding with a warning.
//
// It prints "ok FILE" for each file that passes and each failure with the
// file's name on stderr, and exits 1 when any file failed.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	proxyvalidation "k8s.io/kubernetes/pkg/proxy/apis/config/validation"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"

	// The components' feature gates, which both validations consult.
	_ "k8s.io/kubernetes/pkg/features"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: validate kubelet|kube-proxy FILE...")
		os.Exit(2)
	}
	check := map[string]func(string) error{"kubelet": kubelet, "kube-proxy": kubeProxy}[os.Args[1]]
	if check == nil {
		fmt.Fprintf(os.Stderr, "validate: %q is not kubelet or kube-proxy\n", os.Args[1])
		os.Exit(2)
	}
	failed := false
	for _, file := range os.Args[2:] {
		if err := check(file); err != nil {
			fmt.Fprintf(os.Stderr, "%s %s: %v\n", os.Args[1], file, err)
			failed = true
			continue
		}
		fmt.Printf("ok %s\n", file)
	}
	if failed {
		os.Exit(1)
	}
}

// kubelet loads the file as the kubelet's --config (cmd/kubelet/app
// loadConfigFile: the kubelet's file loader, then the default hard
// eviction thresholds of this OS), sets the feature gates it names, and
// runs the kubelet's validation.
func kubelet(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	_, codecs, err := kubeletscheme.NewSchemeAndCodecs(serializer.EnableStrict)
	if err != nil {
		return err
	}
	if _, _, err := codecs.UniversalDecoder().Decode(data, nil, nil); err != nil {
		return fmt.Errorf("decoding strictly: %w", err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, abs)
	if err != nil {
		return err
	}
	kc, err := loader.Load(context.Background())
	if err != nil {
		return err
	}
	if kc.EvictionHard == nil {
		kc.EvictionHard = eviction.DefaultEvictionHard
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(kc.FeatureGates); err != nil {
		return fmt.Errorf("feature gates: %w", err)
	}
	return kubeletvalidation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate)
}

// kubeProxy decodes the file as kube-proxy's --config does (its scheme's
// strict decoder), applies the defaults kube-proxy applies on Windows
// before validating (cmd/kube-proxy/app server_windows.go
// platformApplyDefaults: kernelspace mode, root HNS endpoint "cbr0"), sets
// the feature gates it names, and runs kube-proxy's validation.
func kubeProxy(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	obj, gvk, err := proxyscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return fmt.Errorf("decoding strictly: %w", err)
	}
	c, ok := obj.(*kubeproxyconfig.KubeProxyConfiguration)
	if !ok {
		return fmt.Errorf("got %v, not a KubeProxyConfiguration", gvk)
	}
	if c.Mode == "" {
		c.Mode = kubeproxyconfig.ProxyModeKernelspace
	}
	if c.Winkernel.RootHnsEndpointName == "" {
		c.Winkernel.RootHnsEndpointName = "cbr0"
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(c.FeatureGates); err != nil {
		return fmt.Errorf("feature gates: %w", err)
	}
	if errs := proxyvalidation.Validate(c); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}
