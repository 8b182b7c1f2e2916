// Package inventory describes the Windows hosts winnode is asked to make
// nodes of, before anything is done with them:
//
//   - host.go: Host, one host to add (address, user, port), and NewHost, the
//     one check every way in goes through (the windows-instances ConfigMap
//     and `winnodectl add`/`remove` flags accept exactly the same hosts and
//     user names, with the same error texts); NormalizeAddress and
//     InstanceName, the WindowsInstance name of an address;
//   - configmap.go: the windows-instances ConfigMap's format (ParseEntry,
//     ParseInstances, EntryError).
//
// It is pure: no API server, no SSH. The operator's sources controller
// (internal/controller/sources.go) turns entries into WindowsInstances;
// winnodectl (internal/cli/add.go) builds a Host from its flags.
package inventory
