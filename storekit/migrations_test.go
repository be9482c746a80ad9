package storekit_test

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

func TestLoadMigrations(t *testing.T) {
	good := fstest.MapFS{
		"m/0002_b.up.sql":   {Data: []byte("B")},
		"m/0002_b.down.sql": {Data: []byte("-B")},
		"m/0001_a.up.sql":   {Data: []byte("A")},
		"m/0001_a.down.sql": {Data: []byte("-A")},
		"m/README":          {Data: []byte("not a migration")},
	}
	migs, err := storekit.LoadMigrations(good, "m", true)
	if err != nil {
		t.Fatal(err)
	}
	want := []storekit.Migration{{1, "0001_a", "A", "-A"}, {2, "0002_b", "B", "-B"}}
	if len(migs) != len(want) || migs[0] != want[0] || migs[1] != want[1] {
		t.Fatalf("got %+v, want %+v", migs, want)
	}
	if migs, err := storekit.LoadMigrations(good, "m", false); err != nil || migs[1].Down != "" {
		t.Fatalf("without down files: %+v, %v", migs, err)
	}
	bad := map[string]fstest.MapFS{
		"gap":        {"m/0001_a.up.sql": {}, "m/0003_c.up.sql": {}},
		"no prefix":  {"m/a.up.sql": {}},
		"zero":       {"m/0000_a.up.sql": {}},
		"not number": {"m/x1_a.up.sql": {}},
		"no down":    {"m/0001_a.up.sql": {}},
		"duplicate":  {"m/0001_a.up.sql": {}, "m/0001_b.up.sql": {}},
	}
	for name, fsys := range bad {
		if _, err := storekit.LoadMigrations(fsys, "m", true); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAppliedVersion(t *testing.T) {
	for _, c := range []struct {
		applied []int
		want    int
		reason  string
	}{
		{nil, 0, ""},
		{[]int{1, 2, 3}, 3, ""},
		{[]int{1, 2, 3, 4}, 0, storekit.ReasonSchemaVersionNewer},
		{[]int{1, 3}, 0, storekit.ReasonSchemaVersionUnknown},
		{[]int{2}, 0, storekit.ReasonSchemaVersionUnknown},
	} {
		got, err := storekit.AppliedVersion("op", c.applied, 3)
		if got != c.want || memorykit.ReasonCode(err) != c.reason || (c.reason != "" && !errors.Is(err, memorykit.ErrIntegrity)) {
			t.Errorf("AppliedVersion(%v) = %d, %v; want %d, reason %q", c.applied, got, err, c.want, c.reason)
		}
	}
}
