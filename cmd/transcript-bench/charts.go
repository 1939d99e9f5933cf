package main

import (
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// chartSpec describes one chart drawn from the series of the same name.
type chartSpec struct {
	chart, file, title, x, y string
	logX, logY               bool
	yScale                   float64
}

var chartSpecs = []chartSpec{
	{chart: "open", file: "open-latency.svg", title: "Open latency against segment count",
		x: "segments in the session", y: "median latency (ms)", logX: true, logY: true, yScale: 1},
	{chart: "mirror", file: "mirror-bytes.svg", title: "Bytes uploaded against session length",
		x: "turns flushed", y: "bytes uploaded (MB)", logY: true, yScale: 1 / mb},
}

// drawCharts draws every chart with data into dir and returns the files written.
func drawCharts(rep *Report, dir string) ([]string, error) {
	var files []string
	for _, spec := range chartSpecs {
		var series []Series
		for _, it := range rep.Items {
			for _, s := range it.Series {
				if s.Chart == spec.chart && len(s.X) > 0 {
					series = append(series, s)
				}
			}
		}
		if len(series) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = spec.title
		p.X.Label.Text, p.Y.Label.Text = spec.x, spec.y
		if spec.logX {
			p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		}
		if spec.logY {
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		}
		p.Legend.Top, p.Legend.Left = true, true
		var args []any
		for _, s := range series {
			pts := make(plotter.XYs, 0, len(s.X))
			for i := range s.X {
				y := s.Y[i] * spec.yScale
				if (spec.logY && y <= 0) || (spec.logX && s.X[i] <= 0) {
					continue // a log axis cannot show zero
				}
				pts = append(pts, plotter.XY{X: s.X[i], Y: y})
			}
			args = append(args, s.Name, pts)
		}
		if err := plotutil.AddLinePoints(p, args...); err != nil {
			return nil, fmt.Errorf("%s: %w", spec.file, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		f := filepath.Join(dir, spec.file)
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, f); err != nil {
			return nil, fmt.Errorf("%s: %w", spec.file, err)
		}
		files = append(files, f)
	}
	return files, nil
}
