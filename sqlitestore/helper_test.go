package sqlitestore_test

// helperMain runs the child side of a test that re-executes the test
// binary; it reports whether it did.
func helperMain() bool { return false }
