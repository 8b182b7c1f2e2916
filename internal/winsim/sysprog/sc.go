package sysprog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/simscm"
)

// sc copies sc.exe's read-only commands (Microsoft's "sc.exe qc" and
// "sc.exe query" command references) against the simulated service
// control manager: qc prints "[SC] QueryServiceConfig SUCCESS" and the
// service's configuration, query its state, each as "        FIELD : value"
// lines; a service that does not exist gets "[SC] OpenService FAILED
// 1060:" and Windows' message, exit status 1060 (ERROR_SERVICE_DOES_NOT_EXIST).
// Its commands that change services (create, config, start, stop, delete,
// failure) are not simulated: winnode's agent does that through the
// service manager's API. They say so, exit status 1.
func sc(e *Env, args []string) int {
	if len(args) != 2 || !(strings.EqualFold(args[0], "qc") || strings.EqualFold(args[0], "query")) {
		crlf(e.Stderr, fmt.Sprintf("sc.exe %s is not simulated on this simulated host (winsim): only sc.exe qc NAME and sc.exe query NAME are.\n", strings.Join(args, " ")))
		return 1
	}
	s, err := e.Services.Get(args[1])
	if errors.Is(err, simscm.ErrNotFound) {
		crlf(e.Stdout, "[SC] OpenService FAILED 1060:\n\nThe specified service does not exist as an installed service.\n\n")
		return 1060
	}
	if err != nil {
		crlf(e.Stderr, fmt.Sprintf("simulated host: sc.exe: %v\n", err))
		return 1
	}
	var b strings.Builder
	field := func(name, value string) { fmt.Fprintf(&b, "        %-18s : %s\n", name, value) }
	more := func(value string) { fmt.Fprintf(&b, "%27s: %s\n", "", value) }
	if strings.EqualFold(args[0], "query") {
		state, flags := scState(s.Status.State)
		fmt.Fprintf(&b, "\nSERVICE_NAME: %s\n", s.Config.Name)
		field("TYPE", "10  WIN32_OWN_PROCESS")
		field("STATE", state)
		fmt.Fprintf(&b, "%32s(%s)\n", "", flags)
		field("WIN32_EXIT_CODE", fmt.Sprintf("%d  (0x%x)", s.Status.ExitCode, s.Status.ExitCode))
		field("SERVICE_EXIT_CODE", "0  (0x0)")
		field("CHECKPOINT", "0x0")
		field("WAIT_HINT", "0x0")
		crlf(e.Stdout, b.String())
		return 0
	}
	b.WriteString("[SC] QueryServiceConfig SUCCESS\n\n")
	fmt.Fprintf(&b, "SERVICE_NAME: %s\n", s.Config.Name)
	field("TYPE", "10  WIN32_OWN_PROCESS")
	field("START_TYPE", scStartType(s.Config.StartType))
	field("ERROR_CONTROL", "1   NORMAL")
	field("BINARY_PATH_NAME", s.Config.BinaryPathName)
	field("LOAD_ORDER_GROUP", "")
	field("TAG", "0")
	field("DISPLAY_NAME", displayName(s.Config))
	deps := s.Config.Dependencies
	if len(deps) == 0 {
		deps = []string{""}
	}
	field("DEPENDENCIES", deps[0])
	for _, d := range deps[1:] {
		more(d)
	}
	field("SERVICE_START_NAME", "LocalSystem")
	crlf(e.Stdout, b.String())
	return 0
}

func scStartType(t plan.StartType) string {
	switch t {
	case plan.StartAuto:
		return "2   AUTO_START"
	case plan.StartDisabled:
		return "4   DISABLED"
	}
	return "3   DEMAND_START"
}

// scState is a state as sc query shows it, and the controls it accepts.
func scState(s simscm.State) (state, flags string) {
	switch s {
	case simscm.Running:
		return "4  RUNNING", "STOPPABLE, NOT_PAUSABLE, ACCEPTS_SHUTDOWN"
	case simscm.StartPending:
		return "2  START_PENDING", "NOT_STOPPABLE, NOT_PAUSABLE, IGNORES_SHUTDOWN"
	case simscm.StopPending:
		return "3  STOP_PENDING", "STOPPABLE, NOT_PAUSABLE, IGNORES_SHUTDOWN"
	}
	return "1  STOPPED", "NOT_STOPPABLE, NOT_PAUSABLE, IGNORES_SHUTDOWN"
}

// displayName is the service's display name: Windows uses the name when
// none was given.
func displayName(c simscm.Config) string {
	if c.DisplayName != "" {
		return c.DisplayName
	}
	return c.Name
}
