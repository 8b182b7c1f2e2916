package sysprog

import (
	"fmt"
	"net/netip"
	"strings"
)

// ipconfig copies ipconfig.exe (Microsoft's "ipconfig" command reference):
// without parameters the "Windows IP Configuration" header and each
// adapter's address, mask and gateway; /all adds the host's name and each
// adapter's description, physical address and DHCP state; /flushdns says
// it flushed the resolver cache. Lines are "   Label . . . : value" with
// Windows' dotted labels. The simulated host has one adapter, "Ethernet",
// with its loopback address (a /8, as 127.0.0.0/8 is) and no gateway; its
// description says it is simulated. Other parameters (/release, /renew,
// ...) change a real host's network and are not simulated: they say so,
// exit status 1.
func ipconfig(e *Env, args []string) int {
	all := false
	switch {
	case len(args) == 0:
	case strings.EqualFold(args[0], "/all") && len(args) == 1:
		all = true
	case strings.EqualFold(args[0], "/flushdns") && len(args) == 1:
		crlf(e.Stdout, "\nWindows IP Configuration\n\nSuccessfully flushed the DNS Resolver Cache.\n")
		return 0
	case args[0] == "/?":
		crlf(e.Stdout, "\nUSAGE:\n    ipconfig [/allcompartments] [/? | /all | /renew [adapter] | /release [adapter] | /flushdns | /displaydns]\n\n")
		return 0
	default:
		crlf(e.Stderr, fmt.Sprintf("ipconfig %s is not simulated on this simulated host (winsim): only ipconfig, ipconfig /all and ipconfig /flushdns are.\n", strings.Join(args, " ")))
		return 1
	}
	var b strings.Builder
	b.WriteString("\nWindows IP Configuration\n\n")
	line := func(label, value string) { fmt.Fprintf(&b, "   %s: %s\n", label, value) }
	if all {
		line("Host Name . . . . . . . . . . . . ", e.Info.Hostname)
		line("Primary Dns Suffix  . . . . . . . ", dnsSuffix(e.Info.FQDN))
		line("Node Type . . . . . . . . . . . . ", "Hybrid")
		line("IP Routing Enabled. . . . . . . . ", "No")
		line("WINS Proxy Enabled. . . . . . . . ", "No")
	}
	b.WriteString("\nEthernet adapter Ethernet:\n\n")
	line("Connection-specific DNS Suffix  . ", "")
	if all {
		line("Description . . . . . . . . . . . ", "simulated network adapter (winsim)")
		line("Physical Address. . . . . . . . . ", macOf(e.Info.DefaultIPv4))
		line("DHCP Enabled. . . . . . . . . . . ", "No")
		line("Autoconfiguration Enabled . . . . ", "Yes")
	}
	for _, ip := range e.Info.IPv4 {
		addr, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		if all {
			line("IPv4 Address. . . . . . . . . . . ", ip+"(Preferred) ")
		} else {
			line("IPv4 Address. . . . . . . . . . . ", ip)
		}
		line("Subnet Mask . . . . . . . . . . . ", maskOf(addr))
	}
	line("Default Gateway . . . . . . . . . ", "")
	if all {
		line("NetBIOS over Tcpip. . . . . . . . ", "Enabled")
	}
	crlf(e.Stdout, b.String())
	return 0
}

func dnsSuffix(fqdn string) string {
	_, d, _ := strings.Cut(fqdn, ".")
	return d
}

// maskOf is the mask of the simulated host's network: 127.0.0.0/8 for its
// loopback address, else a /24.
func maskOf(a netip.Addr) string {
	if a.IsLoopback() {
		return "255.0.0.0"
	}
	return "255.255.255.0"
}

// macOf is a stable physical address for the adapter, in Hyper-V's range
// (00-15-5D), from its address.
func macOf(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return "00-15-5D-00-00-00"
	}
	b := a.As4()
	return fmt.Sprintf("00-15-5D-%02X-%02X-%02X", b[1], b[2], b[3])
}
