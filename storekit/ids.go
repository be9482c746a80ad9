package storekit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// ContentHash is the hash of a record's content that decides whether an
// embedding is current: "sha256:" followed by 64 hex digits.
func ContentHash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// NewRecordID returns a random record ID whose prefix sorts by creation time.
func NewRecordID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli()))
	if _, err := rand.Read(b[8:]); err != nil {
		panic("storekit: crypto/rand failed: " + err.Error())
	}
	return "mem_" + hex.EncodeToString(b[2:]) // 6 bytes of milliseconds + 8 random
}
