package controller

// Event reasons (events.k8s.io/v1 "reason", CamelCase) and actions ("action":
// what the controller was doing). Messages name the object, say what is
// wrong and what to do; they never contain key material or tokens.
const (
	// On the windows-instances ConfigMap, one per bad entry.
	EventReasonInvalidEntry = "InvalidEntry"
	// On the windows-instances ConfigMap when an instance is created or
	// deleted for an entry.
	EventReasonInstanceCreated = "InstanceCreated"
	EventReasonInstanceDeleted = "InstanceDeleted"

	// On the cloud-private-key Secret.
	EventReasonInvalidPrivateKey = "InvalidPrivateKey"
	EventReasonUserDataUpdated   = "UserDataUpdated"

	// On a CertificateSigningRequest.
	EventReasonCSRApproved = "CSRApproved"
)

// Event actions.
const (
	ActionParse   = "Parse"
	ActionCreate  = "Create"
	ActionDelete  = "Delete"
	ActionUpdate  = "Update"
	ActionApprove = "Approve"
)
