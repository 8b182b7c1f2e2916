package instance

// What the instance reconciler and its engine (internal/configure) need,
// for config/rbac/role.yaml, which must equal the hand-written
// config/rbac/*.yaml (config's TestGeneratedRBACIsGranted). These markers
// stand apart from any declaration: controller-gen reads only
// package-level markers for RBAC, and ignores those in a function's doc
// comment. Nodes are patched (labels, annotations, cordon), never updated.
// +kubebuilder:rbac:groups=winnode.io,resources=windowsinstances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=winnode.io,resources=windowsinstances/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;delete
// The kubelet-port pre-flight check asks the API server for each
// configured node's kubelet /healthz through the node proxy
// (configure/kubeletport.go).
// +kubebuilder:rbac:groups="",resources=nodes/proxy,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get
// The cluster DNS for the hosts' kubelets (internal/configure clusterDNS).
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=configmaps,resourceNames=kubelet-config,verbs=get
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=services,resourceNames=kube-dns,verbs=get
// flannel's configuration, by name only (internal/configure network.go).
// +kubebuilder:rbac:groups="",resources=configmaps,resourceNames=kube-flannel-cfg,verbs=get
// On OpenShift, the platform's configuration (internal/openshift): the
// newest rendered worker MachineConfig (listed, and watched with the
// ControllerConfig so that a new one reaches the hosts at once), the kubelet
// CA, the API server's internal URL, the networks, and the API server's CA
// where the rendered config has no kubeconfig, and the cluster's ID
// (ClusterVersion version). Discovery (--platform=auto) needs no permission.
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=controllerconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.openshift.io,resources=infrastructures;networks,verbs=get
// +kubebuilder:rbac:groups=config.openshift.io,resources=clusterversions,resourceNames=version,verbs=get
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=configmaps,resourceNames=kube-root-ca.crt,verbs=get

// windows_exporter's TLS (internal/metricstls, internal/configure
// metrics.go): the nodes' serving certificates are kept in the Secret
// windows-exporter-tls of the operator's namespace, created (above) and
// updated by name; the CA's certificate is published in a ConfigMap of
// that namespace, created and updated by name.
// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=secrets,resourceNames=windows-exporter-tls,verbs=update
// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=configmaps,verbs=create
// +kubebuilder:rbac:groups="",namespace=winnode-system,resources=configmaps,resourceNames=windows-exporter-ca,verbs=update
