// Package configure is winnode's engine: it makes one Windows host a Ready
// node, keeps it so (upgrades), and takes it out again, step by step as
// DESIGN.md "Configuring one host" tells. It works on one WindowsInstance
// in memory and calls back (Configurer.Persist, Event, AfterStep, ...) for
// everything else, so that the operator's instance reconciler
// (internal/controller/instance.go) and winnodectl add/remove/upgrade
// (internal/cli) run the very same steps.
//
// The API:
//
//   - Configurer (configurer.go): what the engine is given (cluster client,
//     SSH key, payload, version, hooks, timeouts); Result, StepError and the
//     Step* names recorded in status.step;
//   - Configure (configure.go): the phase machine, Pending → Configuring →
//     Ready ⇄ Upgrading, Failed with a reason; Deconfigure (deconfigure.go);
//   - Run and RunDeconfigure (run.go): the loops of winnodectl, which has no
//     controller to call it again;
//   - Rollout (upgrade.go): how many nodes upgrades take out of service at
//     once;
//   - FindNode (node.go): the one rule that finds a host's Node;
//   - SetCondition, NodeReady, LabelWorker, AnnotationCordoned.
//
// One file per step, in the order they run:
//
//	connect.go      connect      SSH; the host key trusted on first use, then pinned
//	facts.go        info         winnode-agent.exe info (the agent installed first)
//	credentials.go  credentials  cluster facts and a bootstrap token
//	sync.go         plan, sync   the plan rendered; the payload uploaded by hash
//	upgrade.go, drain.go         a Ready host's turn in the rollout; cordon and drain
//	apply.go        apply        winnode-agent.exe apply
//	join.go         join         waiting for the kubelet to register the Node
//	finish.go       finish       Node Ready: labels, annotations, uncordon, Ready
//	deconfigure.go  drain, remove, delete-node
//
// save.go: a status save that meets the CSR approver's record (a conflict)
// saves again over it.
//
// Every step is idempotent: the status records enough for a crash at any
// point to resume by calling again.
package configure
