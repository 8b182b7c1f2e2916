package main

import (
	"slices"
	"strings"
	"testing"
)

// Help texts in the forms the real programs print (pflag's FlagUsages for
// the kubelet and kube-proxy, Go's flag.PrintDefaults for flanneld),
// continuation lines included.
func TestParse(t *testing.T) {
	pflagHelp := `Usage:
  kube-proxy [flags]

Flags:
      --bind-address-hard-fail        If true kube-proxy will treat failure to bind to a port as fatal and exit
      --cluster-cidr string           The CIDR range of the pods in the cluster.
      --feature-gates mapStringBool   A set of key=value pairs. Options are:
                                      --not-a-flag=true|false (a continuation line)
  -h, --help                          help for kube-proxy
  -v, --v Level                       number for the log level verbosity
      --version version[=true]        --version, --version=raw prints version information and quits
`
	got, err := parse(strings.NewReader(pflagHelp), "pflag")
	want := []string{"bind-address-hard-fail bool", "cluster-cidr value", "feature-gates value", "help bool h", "v value v", "version optional=true"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("pflag: %q, %v; want %q", got, err, want)
	}
	goflagHelp := "Usage: flanneld [OPTION]...\n  -etcd-prefix string\n    \tetcd prefix (default \"/coreos.com/network\")\n" +
		"  -iface value\n    \tinterface to use\n  -ip-masq\n    \tsetup IP masquerade rule\n  -v value\n    \tnumber for the log level verbosity\n"
	got, err = parse(strings.NewReader(goflagHelp), "goflag")
	want = []string{"etcd-prefix value", "iface value", "ip-masq bool", "v value"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("goflag: %q, %v; want %q", got, err, want)
	}
	// containerd's GLOBAL OPTIONS (urfave/cli v3), as containerd.exe
	// v2.4.2 prints them under Wine.
	urfaveHelp := `COMMANDS:
   config    Information on the containerd config
   help, h   Shows a list of commands or help for one command

GLOBAL OPTIONS:
   --config string, -c string     Path to the configuration file (default: "C:\\Program Files\\containerd\\config.toml")
   --log-level string, -l string  Set the logging level [trace, debug, info, warn, error, fatal, panic]
   --root string                  containerd root directory
   --register-service             Register the service and exit
   --help, -h                     Show help
   --version, -v                  Print the version
`
	got, err = parse(strings.NewReader(urfaveHelp), "urfave")
	want = []string{"config value c", "help bool h", "log-level value l", "register-service bool", "root value", "version bool v"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("urfave: %q, %v; want %q", got, err, want)
	}
	// windows_exporter's Flags: (kingpin v2), as windows_exporter.exe
	// v0.27.2 prints them under Wine.
	kingpinHelp := `usage: windows_exporter [<flags>]

Flags:
  -h, --[no-]help                Show context-sensitive help (also try
                                 --help-long and --help-man).
      --config.file=CONFIG.FILE  YAML configuration file to use.
      --web.listen-address=:9182 ...  
                                 Addresses on which to expose metrics and web
      --web.config.file=""       Path to configuration file that can
      --[no-]collectors.print    If true, print available collectors and exit.
      --[no-]version             Show application version.
`
	got, err = parse(strings.NewReader(kingpinHelp), "kingpin")
	want = []string{"collectors.print bool", "config.file value", "help bool h", "version bool", "web.config.file value", "web.listen-address value"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("kingpin: %q, %v; want %q", got, err, want)
	}
	if _, err := parse(strings.NewReader("Error: unknown flag: --help\n"), "pflag"); err == nil {
		t.Error("a text with no flag parsed without error")
	}
}
