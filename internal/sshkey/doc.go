// Package sshkey is the operator's SSH private key: where it is kept
// (Secret cloud-private-key, key private-key.pem: PrivateKeySecret,
// PrivateKeyKey), which keys are accepted (ParsePrivateKey: RSA of at least
// MinRSABits bits, or ed25519), loading it afresh from the cluster
// (LoadSigner) and naming it (KeyFingerprint).
//
// Its users: the operator's keys controller, which renders the user data for
// the key (internal/controller/keys.go), the instance reconciler, which
// connects with it, and winnodectl (ssh, userdata), which checks keys by the
// same rules.
package sshkey
