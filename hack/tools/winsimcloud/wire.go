package winsimcloud

// The simulated cloud's wire types, defined once: the cloud
// (internal/winsim/cloud in the winnode module, which requires this module
// through a replace directive to this folder) serves them, and Client reads
// them. The API (JSON, all on loopback):
//
//	PUT    /instances/{name}  CreateRequest  → 200 Instance (idempotent:
//	                          an existing instance is returned as it is)
//	GET    /instances/{name}  → 200 Instance, 404 when there is none
//	DELETE /instances/{name}  → 200 once the host is powered off and gone,
//	                          404 when there was none
//
// Errors are non-2xx answers with a text body.

// Instance is one simulated cloud instance, as the API reports it.
type Instance struct {
	Name string `json:"name"`
	// ID is the cloud's own identifier ("i-" and 17 hex digits, as EC2's).
	ID string `json:"id"`
	// ProviderID is what a kubelet on the instance registers as its Node's
	// spec.providerID: ProviderIDPrefix and ID.
	ProviderID string `json:"providerID"`
	// Address is the host's IPv4 address (its SSH port is 22).
	Address  string `json:"address"`
	Hostname string `json:"hostname"`
	// State is StateRunning: an instance exists only while its host runs.
	State string `json:"state"`
}

// StateRunning is the State of every instance the API reports.
const StateRunning = "running"

// ProviderIDPrefix starts every instance's provider ID.
const ProviderIDPrefix = "winsim:///"

// CreateRequest is the body of PUT /instances/{name}.
type CreateRequest struct {
	// UserData is what the instance runs at boot, as a cloud's launch
	// agent does (base64 in JSON).
	UserData []byte `json:"userData"`
	// Image names the image the instance boots from, one the cloud knows
	// (a folder of files copied onto the host's C:\, as
	// `winnodectl image` writes it); "" is the cloud's plain Windows
	// Server, which carries no winnode.
	Image string `json:"image,omitempty"`
}
