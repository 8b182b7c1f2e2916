package openshift

import (
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AddToScheme adds the OpenShift types Load reads (config.openshift.io/v1,
// machineconfiguration.openshift.io/v1) to s.
func AddToScheme(s *runtime.Scheme) error {
	if err := configv1.Install(s); err != nil {
		return err
	}
	return mcfgv1.Install(s)
}

// NewReader is a client that reads Load's objects straight from the API
// server (no cache: they are read once per configuration).
func NewReader(cfg *rest.Config) (client.Reader, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := AddToScheme(s); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("building a client for OpenShift's configuration: %w", err)
	}
	return c, nil
}
