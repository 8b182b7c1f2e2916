package sysprog

import (
	"fmt"
	"net/netip"
	"strings"
)

// systeminfo copies systeminfo.exe's default output (Microsoft's
// "systeminfo" command reference; /FO LIST): a blank line, then one
// "Label:" per line padded to column 28, in Windows' order, continuation
// lines (processors, network cards) indented to that column. What the
// simulated host knows is real: its name, its OS ("OS Name: Microsoft
// Windows Server 2019 Datacenter" for build 17763, the 2022 one for build
// 20348, as on those releases), boot time, domain and addresses. Where the
// real program reports hardware the simulator has none of, the value says
// "simulated" (manufacturer, model, BIOS, processor, network card) or is
// N/A, a value systeminfo itself prints (memory, hotfixes). /FO LIST and
// /? are accepted; another option gets systeminfo's "Invalid
// argument/option" error, exit status 1, and a remote computer (/S) is
// not simulated.
func systeminfo(e *Env, args []string) int {
	for i := 0; i < len(args); i++ {
		switch a := strings.ToUpper(args[i]); {
		case a == "/?":
			crlf(e.Stdout, "\nSYSTEMINFO [/S system [/U username [/P [password]]]] [/FO format] [/NH]\n\nDescription:\n    This tool displays operating system configuration information for\n    a local or remote machine, including service pack levels.\n\n")
			return 0
		case a == "/FO" && i+1 < len(args) && strings.EqualFold(args[i+1], "LIST"):
			i++
		case a == "/S":
			crlf(e.Stderr, "ERROR: querying a remote system is not simulated on this simulated host (winsim).\n")
			return 1
		default:
			crlf(e.Stderr, fmt.Sprintf("ERROR: Invalid argument/option - '%s'.\nType \"SYSTEMINFO /?\" for usage.\n", args[i]))
			return 1
		}
	}
	var b strings.Builder
	b.WriteString("\n")
	for _, f := range systemInfoFields(e) {
		for i, v := range f.values {
			label := ""
			if i == 0 {
				label = f.label + ":"
			}
			fmt.Fprintf(&b, "%-27s%s\n", label, v)
		}
	}
	crlf(e.Stdout, b.String())
	return 0
}

type infoField struct {
	label  string
	values []string // the first on the label's line, the others below it
}

func systemInfoFields(e *Env) []infoField {
	info := e.Info
	name := strings.ToUpper(info.Hostname)
	build := info.Build[strings.LastIndexByte(info.Build, '.')+1:]
	boot := "N/A"
	if !info.BootTime.IsZero() {
		boot = info.BootTime.Local().Format("1/2/2006, 3:04:05 PM")
	}
	domain := "WORKGROUP"
	if _, d, ok := strings.Cut(info.FQDN, "."); ok && d != "" {
		domain = d
	}
	one := func(label, value string) infoField { return infoField{label, []string{value}} }
	return []infoField{
		one("Host Name", name),
		one("OS Name", "Microsoft "+info.ProductName),
		one("OS Version", info.Build+" N/A Build "+build),
		one("OS Manufacturer", "Microsoft Corporation"),
		one("OS Configuration", "Standalone Server"),
		one("OS Build Type", "Multiprocessor Free"),
		one("Registered Owner", "N/A"),
		one("Registered Organization", "N/A"),
		one("Product ID", "N/A"),
		one("Original Install Date", "N/A"),
		one("System Boot Time", boot),
		one("System Manufacturer", "winsim (simulated)"),
		one("System Model", "simulated Windows Server host"),
		one("System Type", "x64-based PC"),
		{"Processor(s)", []string{"1 Processor(s) Installed.", "[01]: simulated processor"}},
		one("BIOS Version", "winsim (simulated)"),
		one("Windows Directory", `C:\Windows`),
		one("System Directory", `C:\Windows\system32`),
		one("Boot Device", `\Device\HarddiskVolume1`),
		one("System Locale", "en-us;English (United States)"),
		one("Input Locale", "en-us;English (United States)"),
		one("Time Zone", "(UTC) Coordinated Universal Time"),
		one("Total Physical Memory", "N/A"),
		one("Available Physical Memory", "N/A"),
		one("Virtual Memory: Max Size", "N/A"),
		one("Virtual Memory: Available", "N/A"),
		one("Virtual Memory: In Use", "N/A"),
		one("Page File Location(s)", `C:\pagefile.sys`),
		one("Domain", domain),
		one("Logon Server", `\\`+name),
		one("Hotfix(s)", "N/A"),
		{"Network Card(s)", networkCards(info.IPv4)},
		one("Hyper-V Requirements", "A hypervisor has been detected. Features required for Hyper-V will not be displayed."),
	}
}

// networkCards is the "Network Card(s)" block: one simulated adapter with
// the host's addresses.
func networkCards(ipv4 []string) []string {
	lines := []string{
		"1 NIC(s) Installed.",
		"[01]: simulated network adapter (winsim)",
		"      Connection Name: Ethernet",
		"      DHCP Enabled:    No",
		"      IP address(es)",
	}
	for i, ip := range ipv4 {
		if _, err := netip.ParseAddr(ip); err == nil {
			lines = append(lines, fmt.Sprintf("      [%02d]: %s", i+1, ip))
		}
	}
	return lines
}
