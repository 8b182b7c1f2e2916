// Package testkit holds the two helpers every test of the module may need,
// each written once: golden files (Golden, and the only -update flag of
// the module) and waiting for a condition (Eventually).
//
// It imports no package of this module, so that every package's tests can
// import it, internal/plan's and the agent's included; object builders
// for tests, which need the module's API types, are in testkit/builder.
// Only tests import it: cmd/deps_test.go checks that no shipped binary
// links it.
package testkit
