// Command charts draws the charts of docs/benchmarks.md as SVG files from
// the JSON data files beside them (docs/charts/*.json).
//
// A data file holds the results of one benchmark command in the form
// go test -bench prints them: each sub-benchmark's name (without the
// GOMAXPROCS suffix) and its metrics by unit, the median over the runs
// when the command ran with -count above 1. To refresh one from a new
// run, pipe the benchmark's output into -import:
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkRecallQuality/store=memory' -benchtime 1x |
//		go run ./internal/testsupport/bench/charts -import docs/charts/recall-quality.json
//
// (-machine "…" records the machine and its load in the data file.)
//
// Then, from the repository root, redraw every chart:
//
//	go run ./internal/testsupport/bench/charts
//
// The SVG output depends only on the data file, so the test in this
// package redraws every chart and fails when a committed SVG differs.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// dataFile is one chart's data: where the results come from, and the
// results.
type dataFile struct {
	// Title is the chart's title.
	Title string `json:"title"`
	// Command regenerates Results (piped into -import).
	Command string `json:"command"`
	// Machine describes where and under what load Results were measured.
	Machine string `json:"machine"`
	// Results are the benchmark's results, sorted by name.
	Results []result `json:"results"`
}

// result is one sub-benchmark's metrics by unit (p50-ms, records/s, …).
type result struct {
	Name    string             `json:"name"`
	Metrics map[string]float64 `json:"metrics"`
}

// metric returns the metric unit of the result called name.
func (d *dataFile) metric(name, unit string) (float64, bool) {
	for _, r := range d.Results {
		if r.Name == name {
			v, ok := r.Metrics[unit]
			return v, ok
		}
	}
	return 0, false
}

// chart is one SVG drawn from one data file.
type chart struct {
	data string // the data file's base name, without .json
	svg  string // the SVG's base name, without .svg
	draw func(*dataFile) (*plot.Plot, error)
}

// charts are every chart, in the order they are drawn.
var charts = []chart{
	{"recall-latency", "recall-latency", drawRecallLatency},
	{"recall-quality", "recall-quality", drawRecallQuality},
	{"host-load", "host-goodput", drawHostGoodput},
	{"host-load", "host-refusals", drawHostRefusals},
	{"write-throughput", "write-throughput", drawWriteThroughput},
}

func main() {
	dir := flag.String("dir", "", "the directory of the data files and charts (default: docs/charts of the repository this runs in)")
	imp := flag.String("import", "", "a data file whose results to replace with the go test -bench output read from stdin")
	machine := flag.String("machine", "", "with -import: the machine and its load during the run, for the data file")
	flag.Parse()
	if *dir == "" {
		root, err := repoRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, "charts:", err)
			os.Exit(1)
		}
		*dir = filepath.Join(root, "docs", "charts")
	}
	if err := run(*dir, *imp, *machine, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "charts:", err)
		os.Exit(1)
	}
}

// repoRoot is the nearest directory at or above the working directory
// whose go.mod declares memorykit's module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/goagents/memorykit\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the memorykit repository: pass -dir")
		}
		dir = parent
	}
}

func run(dir, imp, machine string, stdin io.Reader) error {
	if imp != "" {
		if err := importResults(imp, machine, stdin); err != nil {
			return err
		}
	}
	for _, c := range charts {
		svg, err := render(dir, c)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c.svg+".svg"), svg, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// render draws chart c from its data file in dir.
func render(dir string, c chart) ([]byte, error) {
	d, err := readData(filepath.Join(dir, c.data+".json"))
	if err != nil {
		return nil, err
	}
	p, err := c.draw(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.svg, err)
	}
	return svgOf(p)
}

func readData(path string) (*dataFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d dataFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

func writeData(path string, d *dataFile) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// importResults replaces the results of the data file at path with the
// benchmark results in out, and its machine description with machine
// when that is not empty.
func importResults(path, machine string, out io.Reader) error {
	d, err := readData(path)
	if err != nil {
		return err
	}
	res, err := parseBench(out)
	if err != nil {
		return err
	}
	if len(res) == 0 {
		return errors.New("no benchmark results on stdin")
	}
	d.Results = res
	if machine != "" {
		d.Machine = machine
	}
	return writeData(path, d)
}

// procSuffix is the -GOMAXPROCS suffix go test adds to a benchmark's name.
var procSuffix = regexp.MustCompile(`-[0-9]+$`)

// parseBench reads go test -bench output: every "Benchmark…" result line
// gives a name, an iteration count and value/unit pairs. A name seen more
// than once (-count) gets the median of each unit.
func parseBench(r io.Reader) ([]result, error) {
	values := map[string]map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procSuffix.ReplaceAllString(f[0], "")
		if values[name] == nil {
			values[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q: %w", name, f[i], err)
			}
			values[name][f[i+1]] = append(values[name][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []result
	for name, units := range values {
		m := map[string]float64{}
		for unit, vs := range units {
			m[unit] = median(vs)
		}
		out = append(out, result{Name: name, Metrics: m})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
