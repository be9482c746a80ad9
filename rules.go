package memorykit

import "github.com/goagents/memorykit/internal/plumbing/textrule"

// validateID checks an identifier as storekit.ValidateID does.
func validateID(op, field, id string) error {
	if r := textrule.IDProblem(id); r != "" {
		return FieldError(op, field, r)
	}
	return nil
}

// checkReason validates an audit reason as storekit.CheckReason does.
func checkReason(op, reason string) error {
	if r := textrule.ReasonProblem(reason); r != "" {
		return FieldError(op, "reason", r)
	}
	return nil
}
