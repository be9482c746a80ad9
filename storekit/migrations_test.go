package storekit_test

import (
	"testing"
	"testing/fstest"

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
