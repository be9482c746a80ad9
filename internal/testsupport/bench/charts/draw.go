package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette colours the series of every chart, first series first.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// dashed is the line style of a second metric beside a solid first.
var dashed = []vg.Length{vg.Points(5), vg.Points(3)}

const (
	width  = 16 * vg.Centimeter
	height = 10 * vg.Centimeter
)

func newPlot(d *dataFile, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = d.Title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p
}

func svgOf(p *plot.Plot) ([]byte, error) {
	w, err := p.WriterTo(width, height, "svg")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// series is one line: a label and, per x, the result's name.
type series struct {
	label string
	names func(x float64) string
}

// lines draws, for each series, one solid line of unit and one dashed
// line of unit2 (when unit2 is not empty) against xs; a point missing
// from the data is left out of its line.
func lines(p *plot.Plot, d *dataFile, xs []float64, ss []series, unit, label, unit2, label2 string) error {
	for i, s := range ss {
		for k, u := range []string{unit, unit2} {
			if u == "" {
				continue
			}
			var pts plotter.XYs
			for _, x := range xs {
				if v, ok := d.metric(s.names(x), u); ok {
					pts = append(pts, plotter.XY{X: x, Y: v})
				}
			}
			if len(pts) == 0 {
				return fmt.Errorf("no %s results for %s", u, s.label)
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			l.Color, sc.Color = palette[i%len(palette)], palette[i%len(palette)]
			sc.Shape = draw.CircleGlyph{}
			if k == 1 {
				l.Dashes = dashed
			}
			p.Add(l, sc)
			p.Legend.Add(s.label+" "+[]string{label, label2}[k], l)
		}
	}
	return nil
}

// ticks labels the values xs on an axis.
func ticks(xs []float64, label func(float64) string) plot.ConstantTicks {
	var t []plot.Tick
	for _, x := range xs {
		t = append(t, plot.Tick{Value: x, Label: label(x)})
	}
	return t
}

// logTicks labels powers of ten from lo to hi, and 2 and 5 times them.
func logTicks(lo, hi float64) plot.ConstantTicks {
	var t []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t = append(t, plot.Tick{Value: v, Label: trim(v)})
		}
	}
	return t
}

func trim(v float64) string {
	return fmt.Sprintf("%g", v)
}

// recallStores are the stores of the recall latency chart: the
// benchmark's store name and the label.
var recallStores = [][2]string{{"memory", "memorystore"}, {"sqlite", "sqlitestore"}, {"postgres-cached", "pgstore"}}

// drawRecallLatency: recall p50 and p99 against records per Scope, one
// line pair per store (BenchmarkRecall, vectors on).
func drawRecallLatency(d *dataFile) (*plot.Plot, error) {
	p := newPlot(d, "records in the Scope (100 other Scopes in the store)", "recall latency (ms, log scale)")
	xs := []float64{1000, 10000, 50000}
	var ss []series
	for _, st := range recallStores {
		ss = append(ss, series{label: st[1], names: func(x float64) string {
			return fmt.Sprintf("BenchmarkRecall/store=%s/records=%d/vectors=true", st[0], int(x))
		}})
	}
	if err := lines(p, d, xs, ss, "p50-ms", "p50", "p99-ms", "p99"); err != nil {
		return nil, err
	}
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Min, p.X.Max = 700, 70000
	p.X.Tick.Marker = ticks(xs, func(x float64) string { return fmt.Sprintf("%gk", x/1000) })
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(p.Y.Min)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(p.Y.Max)))
	p.Y.Tick.Marker = logTicks(p.Y.Min, p.Y.Max)
	return p, nil
}

// drawRecallQuality: R@5, R@10 and MRR of fused recall, its full-text and
// vector channels and BM25 on both development sets
// (BenchmarkRecallQuality).
func drawRecallQuality(d *dataFile) (*plot.Plot, error) {
	const name = "BenchmarkRecallQuality/store=memory"
	p := newPlot(d, "", "score (higher is better)")
	var groups []string
	for _, set := range []string{"quality", "dialog"} {
		for _, m := range []string{"R@5", "R@10", "MRR"} {
			groups = append(groups, set+" "+m)
		}
	}
	channels := [][2]string{{"fused", "fused (memorykit)"}, {"full_text", "full text"}, {"vector", "vector"}, {"bm25", "BM25"}}
	bw := vg.Points(9)
	for i, ch := range channels {
		var vals plotter.Values
		for _, set := range []string{"quality", "dialog"} {
			for _, m := range []string{"R@5", "R@10", "MRR"} {
				v, ok := d.metric(name, set+"-"+ch[0]+"-"+m)
				if !ok {
					return nil, fmt.Errorf("no %s-%s-%s result", set, ch[0], m)
				}
				vals = append(vals, v)
			}
		}
		b, err := plotter.NewBarChart(vals, bw)
		if err != nil {
			return nil, err
		}
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = bw * vg.Length(float64(i)-float64(len(channels)-1)/2)
		p.Add(b)
		p.Legend.Add(ch[1], b)
	}
	p.NominalX(groups...)
	p.Y.Min, p.Y.Max = 0, 1.3
	p.Legend.Left = false
	return p, nil
}

// hostLevels are the client counts of BenchmarkHostLoad.
var hostLevels = []float64{1, 4, 16, 64, 256}

// hostStores are the stores of the Host load charts.
var hostStores = [][2]string{{"memorystore", "memorystore"}, {"pgstore", "pgstore"}, {"floor", "floor (a server that only refuses)"}}

func hostPlot(d *dataFile) *plot.Plot {
	p := newPlot(d, "concurrent clients (log scale)", "")
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = 0.7, 360
	p.X.Tick.Marker = ticks(hostLevels, trim)
	return p
}

// hostLine draws one store's unit (a per-level metric "c<clients>-…")
// against the client count.
func hostLine(p *plot.Plot, d *dataFile, i int, store [2]string, unit string, dashes []vg.Length) error {
	var pts plotter.XYs
	for _, c := range hostLevels {
		if v, ok := d.metric("BenchmarkHostLoad/"+store[0], fmt.Sprintf("c%d-%s", int(c), unit)); ok {
			pts = append(pts, plotter.XY{X: c, Y: v})
		}
	}
	if len(pts) == 0 {
		return fmt.Errorf("no %s results for %s", unit, store[0])
	}
	l, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color, sc.Color = palette[i%len(palette)], palette[i%len(palette)]
	l.Dashes = dashes
	sc.Shape = draw.CircleGlyph{}
	p.Add(l, sc)
	p.Legend.Add(store[1], l)
	return nil
}

// drawHostGoodput: the example Host's goodput (answers whose recall did
// not degrade, per second) against concurrent clients.
func drawHostGoodput(d *dataFile) (*plot.Plot, error) {
	p := hostPlot(d)
	p.Title.Text = d.Title + ": goodput"
	p.Y.Label.Text = "goodput (good answers per second)"
	for i, st := range hostStores[:2] {
		if err := hostLine(p, d, i, st, "goodput/s", nil); err != nil {
			return nil, err
		}
	}
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = false, false
	return p, nil
}

// drawHostRefusals: the p99 latency of a 503 refusal, as the client saw
// it, against concurrent clients, beside the floor's.
func drawHostRefusals(d *dataFile) (*plot.Plot, error) {
	p := hostPlot(d)
	p.Title.Text = d.Title + ": refusal latency"
	p.Y.Label.Text = "p99 of a 503 (ms, client side)"
	for i, st := range hostStores {
		var dashes []vg.Length
		if st[0] == "floor" {
			dashes = dashed
		}
		if err := hostLine(p, d, i, st, "503-p99-ms", dashes); err != nil {
			return nil, err
		}
	}
	p.Y.Min = 0
	return p, nil
}

// writeBars are the bars of the write throughput chart: the result's
// name and the label.
var writeBars = [][2]string{
	{"BenchmarkWrite/store=memory/mode=batch", "memorystore"},
	{"BenchmarkWrite/store=sqlite/mode=batch", "sqlitestore"},
	{"BenchmarkWrite/store=postgres/mode=batch", "pgstore"},
	{"BenchmarkWrite/store=postgres/copy=schema", "COPY, same schema"},
	{"BenchmarkWrite/store=postgres/copy=floor", "COPY, bare tables"},
}

// drawWriteThroughput: records per second of CreateBatch with embeddings
// on each store, beside PostgreSQL's COPY floors.
func drawWriteThroughput(d *dataFile) (*plot.Plot, error) {
	p := newPlot(d, "", "records per second (batches of 1,000 with vectors)")
	var vals plotter.Values
	var labels []string
	for _, b := range writeBars {
		v, ok := d.metric(b[0], "records/s")
		if !ok {
			return nil, fmt.Errorf("no records/s result for %s", b[0])
		}
		vals = append(vals, v)
		labels = append(labels, b[1])
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return nil, err
	}
	bars.Color = palette[0]
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(labels...)
	p.Y.Min = 0
	return p, nil
}
