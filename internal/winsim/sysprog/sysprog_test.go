package sysprog

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simhns"
	"github.com/winnode/winnode/internal/simscm"
	"github.com/winnode/winnode/internal/winpath"
)

// fakeServices is a service manager's answers.
type fakeServices []simscm.Service

func (f fakeServices) List() []simscm.Status {
	var out []simscm.Status
	for _, s := range f {
		out = append(out, s.Status)
	}
	return out
}

func (f fakeServices) Get(name string) (simscm.Service, error) {
	for _, s := range f {
		if strings.EqualFold(s.Config.Name, name) {
			return s, nil
		}
	}
	return simscm.Service{}, fmt.Errorf("%w: %s", simscm.ErrNotFound, name)
}

func service(name, display string, state simscm.State, deps ...string) simscm.Service {
	return simscm.Service{
		Config: simscm.Config{Name: name, DisplayName: display, BinaryPathName: `C:\k\` + name + `.exe --windows-service`, StartType: plan.StartAuto, Dependencies: deps},
		Status: simscm.Status{Name: name, State: state},
	}
}

// testHost is a simulated host's facts, a kubelet log of 60 lines and an
// HNS overlay network.
func testHost(t *testing.T, build, product string) *Env {
	t.Helper()
	root := filepath.Join(t.TempDir(), "C")
	var log strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&log, "I1126 line %d\r\n", i)
	}
	if err := os.MkdirAll(filepath.Join(root, "var", "log", "kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "var", "log", "kubelet", "kubelet.log"), []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	hns := simhns.Open(root)
	if _, err := hns.CreateNetwork(simhns.Network{Name: "vxlan0", Type: simhns.TypeOverlay, VNI: 4096, Port: 4789,
		Subnets: []simhns.Subnet{{AddressPrefix: "10.244.1.0/24", GatewayAddress: "10.244.1.1"}}}); err != nil {
		t.Fatal(err)
	}
	home, _ := winpath.Parse(`C:\Users\Administrator`)
	return &Env{
		Info: simscm.HostInfo{Hostname: "WIN-7QK2M4", FQDN: "WIN-7QK2M4.corp.example.com", IPv4: []string{"127.0.0.10"}, DefaultIPv4: "127.0.0.10",
			ProductName: product, Build: build, BootTime: time.Date(2026, 11, 26, 19, 48, 12, 0, time.UTC)},
		Services: fakeServices{
			service("containerd", "containerd", simscm.Running),
			service("kubelet", "kubelet", simscm.Running, "containerd"),
			service("kube-proxy", "kube-proxy", simscm.Stopped, "kubelet"),
			service("hybrid-overlay-node", "OVN-Kubernetes hybrid overlay node on Windows", simscm.Running, "kubelet"),
		},
		HNS:  hns,
		Root: root,
		Cwd:  home,
		Exec: func(args []string, stdout, stderr io.Writer) (int, error) {
			p, err := winpath.Parse(`C:\Windows\System32\` + args[0] + ".exe")
			if prog, ok := Lookup(p); err == nil && ok {
				e := testEnvOf(root, stdout, stderr)
				return prog(e, args[1:]), nil
			}
			return 0, ErrNoProgram
		},
	}
}

// testEnvOf is set by run: the Env a nested program gets.
var testEnvOf func(root string, stdout, stderr io.Writer) *Env

// run runs the program at path with args on e, and returns its exit code,
// stdout and stderr, line ends made \n.
func run(e *Env, path string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	e.Stdin, e.Stdout, e.Stderr = strings.NewReader(""), &out, &errOut
	testEnvOf = func(_ string, stdout, stderr io.Writer) *Env {
		nested := *e
		nested.Stdout, nested.Stderr = stdout, stderr
		return &nested
	}
	p, err := winpath.Parse(path)
	if err != nil {
		panic(err)
	}
	prog, ok := Lookup(p)
	if !ok {
		panic("no program at " + path)
	}
	code := prog(e, args)
	return code, strings.ReplaceAll(out.String(), "\r\n", "\n"), strings.ReplaceAll(errOut.String(), "\r\n", "\n")
}

const (
	systemInfoPath = `C:\Windows\System32\systeminfo.exe`
	powerShellPath = `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`
)

// systeminfo's OS lines follow the simulated release, in its format
// (labels padded to column 28).
func TestSystemInfo(t *testing.T) {
	for _, c := range []struct{ build, product, name, version string }{
		{"10.0.17763", "Windows Server 2019 Datacenter", "Microsoft Windows Server 2019 Datacenter", "10.0.17763 N/A Build 17763"},
		{"10.0.20348", "Windows Server 2022 Datacenter", "Microsoft Windows Server 2022 Datacenter", "10.0.20348 N/A Build 20348"},
	} {
		code, out, errOut := run(testHost(t, c.build, c.product), systemInfoPath)
		for _, want := range []string{
			"\nHost Name:                 WIN-7QK2M4\n",
			"\nOS Name:                   " + c.name + "\n",
			"\nOS Version:                " + c.version + "\n",
			"\nSystem Manufacturer:       winsim (simulated)\n",
			"\nDomain:                    corp.example.com\n",
			"\n                                 [01]: 127.0.0.10\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("systeminfo on build %s lacks %q:\n%s", c.build, want, out)
			}
		}
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "\nHost Name:") {
			t.Errorf("systeminfo: exit %d, stderr %q, output starting %q", code, errOut, out[:min(len(out), 20)])
		}
	}
	if code, _, errOut := run(testHost(t, "10.0.17763", "Windows Server 2019 Datacenter"), systemInfoPath, "/X"); code != 1 || errOut != "ERROR: Invalid argument/option - '/X'.\nType \"SYSTEMINFO /?\" for usage.\n" {
		t.Errorf("systeminfo /X: exit %d, stderr %q", code, errOut)
	}
}

// Each program's answers, output and exit status, as Windows gives them.
func TestPrograms(t *testing.T) {
	for _, c := range []struct {
		name     string
		path     string
		args     []string
		code     int
		out, err string // wanted in stdout, stderr
	}{
		{"hostname", `C:\Windows\System32\hostname.exe`, nil, 0, "WIN-7QK2M4\n", ""},
		{"hostname sets nothing", `C:\Windows\System32\hostname.exe`, []string{"other"}, 1, "", "sethostname: Use the Network Control Panel Applet to set hostname.\n"},
		{"Get-Service", powerShellPath, []string{"-Command", "Get-Service kubelet"}, 0,
			"\nStatus   Name               DisplayName\n------   ----               -----------\nRunning  kubelet            kubelet\n\n\n", ""},
		{"Get-Service, a list, a long name", powerShellPath, []string{"-NoProfile", "-Command", "Get-Service kubelet, kube-proxy, hybrid-overlay-node"}, 0,
			"Running  kubelet            kubelet\nStopped  kube-proxy         kube-proxy\nRunning  hybrid-overlay-... OVN-Kubernetes hybrid overlay node ...\n", ""},
		{"Get-Service, one missing", powerShellPath, []string{"Get-Service", "kubelet,", "flanneld"}, 1, "Running  kubelet",
			"Get-Service : Cannot find any service with service name 'flanneld'.\nAt line:1 char:1\n+ Get-Service kubelet, flanneld\n+ ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n    + CategoryInfo          : ObjectNotFound: (flanneld:String) [Get-Service], ServiceCommandException\n    + FullyQualifiedErrorId : NoServiceFoundForGivenName,Microsoft.PowerShell.Commands.GetServiceCommand\n"},
		{"Get-Content -Tail", powerShellPath, []string{"-Command", `Get-Content C:\var\log\kubelet\kubelet.log -Tail 2   # the end`}, 0, "I1126 line 59\nI1126 line 60\n", ""},
		{"Get-Content, no such file", powerShellPath, []string{"-Command", `Get-Content C:\var\log\flanneld\flanneld.log -Tail 20`}, 1, "",
			`Get-Content : Cannot find path 'C:\var\log\flanneld\flanneld.log' because it does not exist.`},
		{"Get-HnsNetwork | Select", powerShellPath, []string{"-Command", "Get-HnsNetwork | Select Name, Type, Subnets"}, 0,
			"\nName   Type    Subnets\n----   ----    -------\nvxlan0 Overlay {@{AddressPrefix=10.244.1.0/24; GatewayAddress=10.244.1.1}}\n\n\n", ""},
		{"systeminfo | Select-String", powerShellPath, []string{"-Command", `systeminfo | Select-String "OS Name"`}, 0,
			"\nOS Name:                   Microsoft Windows Server 2019 Datacenter\n\n\n", ""},
		{"a name that is no command", powerShellPath, []string{"-Command", "Get-Srvice kubelet"}, 1, "",
			"Get-Srvice : The term 'Get-Srvice' is not recognized as the name of a cmdlet"},
		{"a typo", powerShellPath, []string{"-Command", "hostnme"}, 1, "", "hostnme : The term 'hostnme' is not recognized"},
		{"a cmdlet not simulated", powerShellPath, []string{"-Command", "Get-Acl C:\\k"}, 1, "", "Get-Acl : The term 'Get-Acl' is not recognized as the name of a cmdlet, function, script file, or operable program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again. (This simulated host's PowerShell, winsim's, has only the cmdlets"},
		{"a variable", powerShellPath, []string{"-Command", "$x = 1"}, 1, "", "not simulated"},
		{"no command", powerShellPath, nil, 1, "", "an interactive PowerShell session is not simulated"},
		{"sc qc", `C:\Windows\System32\sc.exe`, []string{"qc", "kube-proxy"}, 0,
			"[SC] QueryServiceConfig SUCCESS\n\nSERVICE_NAME: kube-proxy\n        TYPE               : 10  WIN32_OWN_PROCESS\n        START_TYPE         : 2   AUTO_START\n        ERROR_CONTROL      : 1   NORMAL\n        BINARY_PATH_NAME   : C:\\k\\kube-proxy.exe --windows-service\n        LOAD_ORDER_GROUP   : \n        TAG                : 0\n        DISPLAY_NAME       : kube-proxy\n        DEPENDENCIES       : kubelet\n        SERVICE_START_NAME : LocalSystem\n", ""},
		{"sc qc, no such service", `C:\Windows\System32\sc.exe`, []string{"qc", "nope"}, 1060, "[SC] OpenService FAILED 1060:\n\nThe specified service does not exist as an installed service.\n", ""},
		{"sc query", `C:\Windows\System32\sc.exe`, []string{"query", "kubelet"}, 0, "        STATE              : 4  RUNNING\n                                (STOPPABLE, NOT_PAUSABLE, ACCEPTS_SHUTDOWN)\n", ""},
		{"sc stop", `C:\Windows\System32\sc.exe`, []string{"stop", "kubelet"}, 1, "", "is not simulated"},
		{"ipconfig /all", `C:\Windows\System32\ipconfig.exe`, []string{"/all"}, 0,
			"\nWindows IP Configuration\n\n   Host Name . . . . . . . . . . . . : WIN-7QK2M4\n   Primary Dns Suffix  . . . . . . . : corp.example.com\n", ""},
		{"ipconfig", `C:\Windows\System32\ipconfig.exe`, nil, 0,
			"Ethernet adapter Ethernet:\n\n   Connection-specific DNS Suffix  . : \n   IPv4 Address. . . . . . . . . . . : 127.0.0.10\n   Subnet Mask . . . . . . . . . . . : 255.0.0.0\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(testHost(t, "10.0.17763", "Windows Server 2019 Datacenter"), c.path, c.args...)
			if code != c.code || !strings.Contains(out, c.out) || (c.err == "") != (errOut == "") || !strings.Contains(errOut, c.err) {
				t.Errorf("exit %d (want %d)\nstdout:\n%q\nwant in it:\n%q\nstderr:\n%q\nwant in it:\n%q", code, c.code, out, c.out, errOut, c.err)
			}
		})
	}
}
