// Package host is the operator's (and winnodectl's) client to one Windows
// host, over SSH and SFTP only. One file per step:
//
//   - connect.go: Connect dials, checks the host key (trusted on first use,
//     then pinned) before any credential is sent, authenticates with the
//     private key, and keeps the connection alive;
//   - run.go: Run runs exactly one program, its command line built with
//     wincmd.Join from arguments that neither cmd.exe nor PowerShell
//     interprets;
//   - answer.go: RunAgent decodes the agent's one JSON document, or its
//     machine-readable error;
//   - sync.go: Sync uploads, by hash, only what the host lacks, to
//     content-addressed blobs in a staging folder; SyncPipelined does the
//     same through the agent's `receive` (stream.go), which decodes and
//     hashes the blobs while they arrive; resume.go continues blobs cut
//     off midway;
//   - files.go: Stat and ReadFile;
//   - errors.go: the typed errors callers tell apart with errors.As
//     (*UnreachableError, *AuthError, *HostKeyMismatchError, *AgentError,
//     *ProgramNotFoundError, *NonsenseError, *OutputTooLargeError).
//
// Host paths are Windows paths (`C:\k\kubelet.exe`); winpath converts them to
// the SFTP form (`/C:/k/kubelet.exe`). The package knows nothing about
// Kubernetes: callers pass keys and pinned host keys in and persist what they
// learn. Nothing sent or received (plans, kubeconfigs, tokens) is logged.
package host
