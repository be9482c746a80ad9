//go:build !linux

package main

// lowerThreadPriority does nothing outside Linux: the work pool's threads
// keep the default priority there, so the pool only bounds the work.
func lowerThreadPriority(int) error { return nil }
