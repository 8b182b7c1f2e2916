// Package builder makes the API objects tests need (WindowsInstance,
// Nodes, OpenShift and Cluster API Machines, certificate signing
// requests), each from a name and the few fields a test cares about, as
// cluster-api's internal/test/builder and karpenter's pkg/test do: a test
// reads as what it sets, not as nested literals.
//
// A builder sets only what it is told (no defaults), so an object built
// here is the literal it replaces. Build returns a new object each time.
// The package imports the module's API types and nothing else of the
// module, so every test package can import it without a cycle; only
// tests import it (cmd/deps_test.go).
package builder
