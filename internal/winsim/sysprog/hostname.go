package sysprog

import "fmt"

// hostname copies hostname.exe (Microsoft's "hostname" command reference:
// "Displays the host name portion of the full computer name of the
// computer", no parameters but /?): the host name and a line end. Given
// anything else it does not set the name but says how to, as Windows'
// does ("sethostname: Use the Network Control Panel Applet to set
// hostname."; "-s" gets "hostname -s is not supported."), exit status 1.
func hostname(e *Env, args []string) int {
	switch {
	case len(args) == 0:
		crlf(e.Stdout, e.Info.Hostname+"\n")
		return 0
	case args[0] == "/?":
		crlf(e.Stdout, "\nPrints the name of the current host.\n\nhostname\n\n")
		return 0
	case args[0] == "-s":
		crlf(e.Stderr, "hostname -s is not supported.\n")
	default:
		crlf(e.Stderr, fmt.Sprintln("sethostname: Use the Network Control Panel Applet to set hostname."))
	}
	return 1
}
