package main

import (
	"errors"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
)

// nextStep names what an operator can do about a failed command, or ""
// when there is nothing specific to say. It reads only the error's kind
// and reason code, so it never repeats content.
func nextStep(cmd string, err error) string {
	var e *memorykit.Error
	if !errors.As(err, &e) {
		return ""
	}
	if e.Reason == sqlitestore.ReasonLocked {
		return "another process has the SQLite file open: stop the Host first (one process holds the file at a time)"
	}
	switch e.Kind {
	case memorykit.ErrInvalidTransition:
		switch e.Reason {
		case "from_candidate":
			return "the record is a candidate: reject or activate the candidate first ('memorykit candidates reject|activate --id ...')"
		case "from_active":
			if cmd == "erase" {
				return "the record is active: forget it first ('memorykit forget --id ...'), then erase it"
			}
			return "the record is already active: to take it out of recall, forget it ('memorykit forget --id ...')"
		case "from_superseded":
			return "a newer record of the same key replaced this one: see 'memorykit audit --id ...' and act on the active record"
		case "from_rejected", "from_forgotten":
			return "the record is out of recall already; only 'memorykit erase --id ...' still applies to it"
		case "from_erased":
			return "the record is erased; nothing is left to act on"
		}
	case memorykit.ErrVersionConflict:
		return "the record changed since you read it: check 'memorykit audit --id ...' and retry with the current --expect-version"
	case memorykit.ErrNotFound:
		return "no such record in this project: list IDs with 'memorykit candidates list' (IDs belong to one tenant and project)"
	case memorykit.ErrForbidden:
		return "the operator may not do this in this project"
	}
	return ""
}
