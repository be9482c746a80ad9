package sqlitestore

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	unorm "golang.org/x/text/unicode/norm"

	"github.com/goagents/memorykit"
)

// ErasureHit is one file in which VerifyErased found the text: the file's
// base name and the byte offset of the first occurrence (-1 when only the
// NFKC form of the file matched). It never holds the text.
type ErasureHit struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
}

// verifiedSuffixes are the files SQLite keeps beside a database.
var verifiedSuffixes = []string{"", "-wal", "-journal", "-shm"}

// VerifyErased scans the raw bytes of the database file at path and of the
// files SQLite keeps beside it (-wal, -journal, -shm) for canary, ignoring
// case, and also in NFKC form, so text stored in a compatibility form
// (full-width letters, say) is found too. It returns the files that hold
// it, or nothing. It reads pages, free pages and WAL frames alike: after
// an erase (which checkpoints and truncates the WAL) and a purge (which
// also vacuums), erased text must be in none of them. It does not need the
// file's lock, so it can check a file a running store holds.
func VerifyErased(path, canary string) ([]ErasureHit, error) {
	const op = "sqlitestore.verify_erased"
	if strings.TrimSpace(canary) == "" {
		return nil, memorykit.FieldError(op, "canary", "empty")
	}
	if path == "" {
		return nil, memorykit.FieldError(op, "path", "missing")
	}
	needles := [][]byte{[]byte(strings.ToLower(canary)), []byte(strings.ToLower(unorm.NFKC.String(canary)))}
	var hits []ErasureHit
	found := false
	for _, suffix := range verifiedSuffixes {
		raw, err := os.ReadFile(path + suffix)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, memorykit.WrapError(op, memorykit.ErrUnavailable, "read_failed", err)
		}
		if suffix == "" {
			found = true
		}
		lower := bytes.ToLower(raw)
		offset := int64(-1)
		for _, n := range needles {
			if i := bytes.Index(lower, n); i >= 0 && (offset < 0 || int64(i) < offset) {
				offset = int64(i)
			}
		}
		hit := offset >= 0
		if !hit {
			folded := bytes.ToLower(unorm.NFKC.Bytes(raw))
			for _, n := range needles {
				hit = hit || bytes.Contains(folded, n)
			}
		}
		if hit {
			hits = append(hits, ErasureHit{File: filepath.Base(path + suffix), Offset: offset})
		}
	}
	if !found {
		return nil, memorykit.NewError(op, memorykit.ErrNotFound, "no_database_file")
	}
	return hits, nil
}

// VerifyErased scans the store's file (see the package function).
func (s *Store) VerifyErased(canary string) ([]ErasureHit, error) {
	return VerifyErased(s.path, canary)
}
