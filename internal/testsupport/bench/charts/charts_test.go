package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docsCharts is where the committed data files and charts live.
var docsCharts = func() string {
	root, err := repoRoot()
	if err != nil {
		panic(err)
	}
	return filepath.Join(root, "docs", "charts")
}()

// TestChartsMatchTheirData redraws every chart from its committed data
// file and compares the bytes with the committed SVG: a data file changed
// without redrawing (or an SVG edited by hand) fails here. Redraw with
// go run ./internal/testsupport/bench/charts from the repository root.
func TestChartsMatchTheirData(t *testing.T) {
	for _, c := range charts {
		t.Run(c.svg, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(docsCharts, c.svg+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := render(docsCharts, c)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("docs/charts/%s.svg differs from what docs/charts/%s.json draws: run go run ./internal/testsupport/bench/charts", c.svg, c.data)
			}
		})
	}
}

// TestChartsAreDeterministicAndFollowTheData: drawing twice gives the
// same bytes, and changing one value of the data changes the chart, so
// the comparison above can fail.
func TestChartsAreDeterministicAndFollowTheData(t *testing.T) {
	for _, c := range charts {
		t.Run(c.svg, func(t *testing.T) {
			d, err := readData(filepath.Join(docsCharts, c.data+".json"))
			if err != nil {
				t.Fatal(err)
			}
			a, err := drawSVG(c, d)
			if err != nil {
				t.Fatal(err)
			}
			b, err := drawSVG(c, d)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Fatal("two drawings of the same data differ")
			}
			changed := false
			for _, r := range d.Results {
				for unit, v := range r.Metrics {
					if v > 0 && (strings.HasSuffix(unit, "-ms") || strings.HasSuffix(unit, "/s") || strings.Contains(unit, "fused")) {
						r.Metrics[unit] = v * 0.5
						changed = true
					}
				}
			}
			if !changed {
				t.Fatal("no value to change: the check would be vacuous")
			}
			x, err := drawSVG(c, d)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(a, x) {
				t.Fatal("halving the data left the chart unchanged")
			}
		})
	}
}

// TestParseBench reads go test -bench output: the GOMAXPROCS suffix goes,
// -count repeats become their median, other lines are ignored.
func TestParseBench(t *testing.T) {
	out := `goos: linux
BenchmarkWrite/store=memory/mode=batch-2   	   10000	     99183 ns/op	     10082 records/s
BenchmarkWrite/store=memory/mode=batch-2   	   10000	     99183 ns/op	     9000 records/s
BenchmarkWrite/store=memory/mode=batch-2   	   10000	     99183 ns/op	     12000 records/s
--- BENCH: BenchmarkWrite
    write_bench_test.go:1: a log line 1 2
BenchmarkRecall/store=sqlite/records=1000/vectors=true-2  300  745665 ns/op  0.1650 p50-ms  6.335 p99-ms
PASS
`
	res, err := parseBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("got %d results, want 2: %+v", len(res), res)
	}
	if res[0].Name != "BenchmarkRecall/store=sqlite/records=1000/vectors=true" || res[0].Metrics["p99-ms"] != 6.335 {
		t.Fatalf("first result %+v", res[0])
	}
	if res[1].Name != "BenchmarkWrite/store=memory/mode=batch" || res[1].Metrics["records/s"] != 10082 {
		t.Fatalf("second result %+v: want the median 10082 records/s", res[1])
	}
}

func drawSVG(c chart, d *dataFile) ([]byte, error) {
	p, err := c.draw(d)
	if err != nil {
		return nil, err
	}
	return svgOf(p)
}

// TestImportReplacesResults: -import keeps the title and command, replaces
// the results and, when given, the machine; empty input changes nothing.
func TestImportReplacesResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	if err := writeData(path, &dataFile{Title: "T", Command: "C", Machine: "M", Results: []result{{Name: "BenchmarkOld", Metrics: map[string]float64{"x": 1}}}}); err != nil {
		t.Fatal(err)
	}
	if err := importResults(path, "", strings.NewReader("PASS\n")); err == nil {
		t.Fatal("an import without results succeeded")
	}
	if err := importResults(path, "quiet", strings.NewReader("BenchmarkNew-2  1  5 ns/op  7 records/s\n")); err != nil {
		t.Fatal(err)
	}
	d, err := readData(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.Title != "T" || d.Command != "C" || d.Machine != "quiet" || len(d.Results) != 1 || d.Results[0].Name != "BenchmarkNew" || d.Results[0].Metrics["records/s"] != 7 {
		t.Fatalf("after import: %+v", d)
	}
}
