package csr

import "github.com/winnode/winnode/internal/fixture"

// The CSR decision's own tests are in internal/csrapproval; the requests of
// the approver's tests here are made as there, by package fixture.
type csrTemplate = fixture.CSR

var (
	makeCSRPEM    = fixture.CSRPEM
	clientUsages  = fixture.ClientUsages
	servingUsages = fixture.ServingUsages
)
