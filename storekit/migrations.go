package storekit

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/goagents/memorykit"
)

// Migration is one numbered schema step of a SQL store, read from a pair
// of files NNNN_name.up.sql and NNNN_name.down.sql.
type Migration struct {
	// Version is NNNN: the schema version the step brings a store to.
	Version int
	// Name is the file name without its .up.sql suffix ("0003_jobs").
	Name string
	// Up is the body of the .up.sql file.
	Up string
	// Down is the body of the .down.sql file, which brings the schema back
	// to Version-1; empty when the store keeps no down files.
	Down string
}

// LoadMigrations reads every dir/NNNN_name.up.sql file of fsys (an
// embedded file system, as a store ships its schema) and returns the
// steps ordered by version. The versions must be exactly 1..n; with
// requireDown, every step must have its .down.sql file too. Any other
// shape is an error, so a store built with a broken set of files refuses
// to open instead of migrating part of the way.
func LoadMigrations(fsys fs.FS, dir string, requireDown bool) ([]Migration, error) {
	paths, err := fs.Glob(fsys, path.Join(dir, "*.up.sql"))
	if err != nil {
		return nil, err
	}
	out := make([]Migration, 0, len(paths))
	for _, p := range paths {
		base := path.Base(p)
		num, _, ok := strings.Cut(base, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: no version prefix", base)
		}
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: bad version prefix", base)
		}
		up, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		m := Migration{Version: v, Name: strings.TrimSuffix(base, ".up.sql"), Up: string(up)}
		if requireDown {
			down, err := fs.ReadFile(fsys, path.Join(dir, m.Name+".down.sql"))
			if err != nil {
				return nil, fmt.Errorf("migration %s: no down file", m.Name)
			}
			m.Down = string(down)
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration versions must be 1..n without gaps")
		}
	}
	return out, nil
}

// Reason codes of AppliedVersion's errors; stores re-export them.
const (
	// ReasonSchemaVersionNewer: the schema was migrated by a newer version
	// of the store than the one reading it.
	ReasonSchemaVersionNewer = "schema_version_newer"
	// ReasonSchemaVersionUnknown: the schema records a version sequence
	// the store has no migrations for.
	ReasonSchemaVersionUnknown = "schema_version_unknown"
)

// AppliedVersion checks the versions a schema records as applied (in
// ascending order) against the newest version the store supports and
// returns the schema's current version: applied must be exactly 1..n with
// n <= supported. A newer version is ErrIntegrity with reason
// ReasonSchemaVersionNewer, any other gap or stray version
// ReasonSchemaVersionUnknown, both with field "schema_version".
func AppliedVersion(op string, applied []int, supported int) (int, error) {
	current := 0
	for _, v := range applied {
		switch {
		case v > supported:
			return 0, &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Field: "schema_version", Reason: ReasonSchemaVersionNewer}
		case v != current+1:
			return 0, &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Field: "schema_version", Reason: ReasonSchemaVersionUnknown}
		}
		current = v
	}
	return current, nil
}
