// Package testkit holds the helpers every test of the module may need,
// each written once: golden files (Golden, and the only -update flag of
// the module), waiting for a condition (Eventually) and a CA certificate of
// no cluster (SelfSignedCA).
//
// It imports no package of this module, so that every package's tests can
// import it, internal/plan's and the agent's included; object builders
// for tests, which need the module's API types, are in testkit/builder.
// Only tests import it: cmd/deps_test.go checks that no shipped binary
// links it.
package testkit
