// Package demo is `winnodectl demo`: a real control plane (internal/testenv),
// simulated Windows hosts (internal/winsim) and the operator's controllers
// (internal/controller), all in one process on one Linux machine, with the
// hosts' progress shown until every one is a Ready node.
//
// demo.go is the command, its flags and its run (set up, wait, follow,
// stop); setup.go starts what runs (control plane, hosts, operator) and
// creates the objects; progress.go shows the hosts' progress, the "try"
// lines and answers typed commands; openshift.go and capi.go are the
// openshift and capi flavors (a Machine API or Cluster API with a
// simulated cloud, and a Windows MachineSet or MachineDeployment; the capi
// flavor's Machines join a second control plane, its workload cluster);
// demo_operator.go runs the controllers in process; demo_other.go is the
// command's stand-in where the demo cannot run (not Linux). It lives apart
// from internal/cli so that the commands an administrator runs against a
// real cluster do not depend on the simulator: cmd/winnodectl wires it in.
package demo
