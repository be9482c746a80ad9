package embedder

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
)

// vectorChecksum is the hex SHA-256 of v's float32 bits, little endian.
func vectorChecksum(v []float32) string {
	h := sha256.New()
	var b [4]byte
	for _, x := range v {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cosine is the cosine similarity of two vectors, summed in float64.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}
