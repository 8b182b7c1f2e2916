package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func changesPlan() *Plan {
	return &Plan{
		SchemaVersion: SchemaVersion,
		Version:       "v1",
		Cluster:       "cluster-a",
		Files: []File{
			{Path: `C:\k\kubelet.exe`, SHA256: strings.Repeat("1", 64), Size: 1},
			{Path: `C:\k\kube-proxy.exe`, SHA256: strings.Repeat("2", 64), Size: 1},
			{Path: `C:\k\kubelet-config.yaml`, SHA256: strings.Repeat("3", 64), Size: 1},
			{Path: `C:\k\payload-padding.bin`, SHA256: strings.Repeat("4", 64), Size: 1},
		},
		Services: []Service{
			{Name: "kubelet", Binary: `C:\k\kubelet.exe`, Args: []string{"--config", `C:\k\kubelet-config.yaml`},
				Uses: []string{`C:\k\kubelet-config.yaml`}, Dependencies: []string{"containerd"}, StartType: StartAuto},
			{Name: "kube-proxy", Binary: `C:\k\kube-proxy.exe`, Args: []string{}, Dependencies: []string{"kubelet"}, StartType: StartAuto},
		},
	}
}

// installedAs is what the operator reads of a host that applied p: the
// agent's info, through JSON.
func installedAs(t *testing.T, p *Plan) *InstalledPlan {
	t.Helper()
	files := map[string]string{}
	for _, f := range p.Files {
		files[f.Path] = f.SHA256
	}
	data, err := json.Marshal(Info{InstalledPlan: &InstalledPlan{Version: p.Version, Files: files, Complete: true, Services: p.Services, Cluster: p.Cluster}})
	if err != nil {
		t.Fatal(err)
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	return info.InstalledPlan
}

func TestChangedServices(t *testing.T) {
	for _, tc := range []struct {
		name      string
		installed func(*testing.T) *InstalledPlan
		next      func(*Plan)
		want      []string
	}{
		{name: "nothing changes", want: nil},
		{name: "only the version changes", next: func(p *Plan) { p.Version = "v2" }, want: nil},
		{name: "a file no service reads changes",
			next: func(p *Plan) { p.Files[3].SHA256 = strings.Repeat("5", 64) }, want: nil},
		{name: "a new file no service reads",
			next: func(p *Plan) { p.Files = append(p.Files, File{Path: `C:\k\new.txt`, SHA256: strings.Repeat("6", 64)}) }, want: nil},
		{name: "the kubelet binary restarts the kubelet and kube-proxy, which depends on it",
			next: func(p *Plan) { p.Files[0].SHA256 = strings.Repeat("5", 64) }, want: []string{"kube-proxy", "kubelet"}},
		{name: "a file the kubelet uses",
			next: func(p *Plan) { p.Files[2].SHA256 = strings.Repeat("5", 64) }, want: []string{"kube-proxy", "kubelet"}},
		{name: "kube-proxy's binary restarts kube-proxy only",
			next: func(p *Plan) { p.Files[1].SHA256 = strings.Repeat("5", 64) }, want: []string{"kube-proxy"}},
		{name: "kube-proxy's arguments",
			next: func(p *Plan) { p.Services[1].Args = []string{"--v=2"} }, want: []string{"kube-proxy"}},
		{name: "the description Decode fills in is no change",
			next: func(p *Plan) { p.Services[0].Description = ServiceDescription }, want: nil},
		{name: "a new service",
			next: func(p *Plan) {
				p.Services = append(p.Services, Service{Name: "csi-proxy", Binary: `C:\k\kubelet.exe`, StartType: StartAuto})
			}, want: []string{"csi-proxy"}},
		{name: "a service dropped",
			next: func(p *Plan) { p.Services = p.Services[:1] }, want: []string{"kube-proxy"}},
		{name: "another cluster: everything",
			next: func(p *Plan) { p.Cluster = "cluster-b" }, want: []string{"kube-proxy", "kubelet"}},
		{name: "the host paths differ in case only",
			installed: func(t *testing.T) *InstalledPlan {
				ip := installedAs(t, changesPlan())
				ip.Files = map[string]string{`c:\K\KUBELET.EXE`: strings.Repeat("1", 64), `C:\k\kube-proxy.exe`: strings.Repeat("2", 64), `C:\k\kubelet-config.yaml`: strings.Repeat("3", 64)}
				return ip
			}, want: nil},
		{name: "a host never configured",
			installed: func(*testing.T) *InstalledPlan { return nil }, want: []string{"kube-proxy", "kubelet"}},
		{name: "an apply that did not finish",
			installed: func(t *testing.T) *InstalledPlan {
				ip := installedAs(t, changesPlan())
				ip.Complete = false
				return ip
			}, want: []string{"kube-proxy", "kubelet"}},
		{name: "an agent that does not report its services",
			installed: func(t *testing.T) *InstalledPlan {
				ip := installedAs(t, changesPlan())
				ip.Services = nil
				return ip
			}, want: []string{"kube-proxy", "kubelet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var installed *InstalledPlan
			if tc.installed != nil {
				installed = tc.installed(t)
			} else {
				installed = installedAs(t, changesPlan())
			}
			next := changesPlan()
			if tc.next != nil {
				tc.next(next)
			}
			if got := ChangedServices(installed, next); !slices.Equal(got, tc.want) {
				t.Errorf("ChangedServices = %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzChangedServices feeds what a host may answer as its installed plan
// (outside input): the prediction never panics and names only services of
// either plan, and always every service when it cannot know.
func FuzzChangedServices(f *testing.F) {
	seed, _ := json.Marshal(InstalledPlan{Version: "v1", Complete: true, Cluster: "cluster-a",
		Files: map[string]string{`C:\k\kubelet.exe`: strings.Repeat("1", 64)}, Services: changesPlan().Services})
	f.Add(seed)
	f.Add([]byte(`{"complete":true,"services":[{"name":"kubelet","dependencies":["kube-proxy"]},{"name":"KUBE-PROXY","dependencies":["kubelet"]}]}`))
	f.Add([]byte(`{"complete":false}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ip *InstalledPlan
		if err := json.Unmarshal(data, &ip); err != nil {
			return
		}
		next := changesPlan()
		got := ChangedServices(ip, next)
		known := map[string]bool{}
		for _, s := range next.Services {
			known[s.Name] = true
		}
		if ip != nil {
			for _, s := range ip.Services {
				known[s.Name] = true
			}
		}
		for _, name := range got {
			if !known[name] {
				t.Errorf("ChangedServices named %q, in neither plan", name)
			}
		}
		if (ip == nil || !ip.Complete || len(ip.Services) == 0) && len(got) != len(next.Services) {
			t.Errorf("installed plan unknown: got %v, want every service", got)
		}
	})
}
