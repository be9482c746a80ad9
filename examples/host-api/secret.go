package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"
)

// envTombstoneSecret names the variable that holds the tombstone secret.
const envTombstoneSecret = "MEMORYKIT_TOMBSTONE_SECRET"

// SecretFile is the name of the tombstone secret the embedded Host keeps
// beside its SQLite file when MEMORYKIT_TOMBSTONE_SECRET is not set. It
// belongs with the data: back both up together.
const SecretFile = "tombstone.secret"

// tombstoneSecret returns the secret that keys erased records' key
// digests. $MEMORYKIT_TOMBSTONE_SECRET wins when set. Without it, a Host on
// PostgreSQL (dsn set) fails with an error naming the variable; the
// embedded Host (dataDir set) reads dataDir/tombstone.secret, creating it
// with 32 random bytes (mode 0600) on first start and saying so in one log
// line; a Host in process memory (both empty) uses a random secret that
// lives as long as its memory does.
func tombstoneSecret(log *zap.Logger, getenv func(string) string, dsn, dataDir string) ([]byte, error) {
	if s := getenv(envTombstoneSecret); s != "" {
		return []byte(s), nil
	}
	switch {
	case dsn != "":
		return nil, errors.New("$" + envTombstoneSecret + " is required with -dsn: the secret (32 bytes or more) that keys erased memories' key digests, for example: export " + envTombstoneSecret + "=\"$(openssl rand -hex 32)\"")
	case dataDir == "":
		return randomSecret()
	}
	path := filepath.Join(dataDir, SecretFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		s := strings.TrimSpace(string(b))
		if s == "" {
			return nil, errors.New("the tombstone secret file " + path + " is empty: restore it from the backup of the data, or set $" + envTombstoneSecret)
		}
		return []byte(s), nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("cannot read the tombstone secret file " + path + " (set $" + envTombstoneSecret + " instead)")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	secret, err := randomSecret()
	if err != nil {
		return nil, err
	}
	// O_EXCL: two Hosts starting at once never overwrite each other's.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, errors.New("cannot create the tombstone secret file " + path + " (set $" + envTombstoneSecret + " instead)")
	}
	_, werr := f.Write(append(secret, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return nil, errors.New("cannot write the tombstone secret file " + path)
	}
	log.Info("created a tombstone secret beside the data; back it up with the data (or set $"+envTombstoneSecret+")", zap.String("file", path))
	return secret, nil
}

// randomSecret is 32 random bytes, hex-encoded.
func randomSecret() ([]byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return []byte(hex.EncodeToString(b)), nil
}
