package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one measured figure next to its baseline.
type Row struct {
	// Item is the number of the measurement in BENCHMARKS.md (1–18).
	Item int `json:"item"`
	// Name says what was measured.
	Name string `json:"name"`
	// Unit is the unit of Value and BaselineValue.
	Unit string `json:"unit"`
	// Value is the store's figure.
	Value float64 `json:"value"`
	// Baseline names what the store is compared with.
	Baseline string `json:"baseline,omitempty"`
	// BaselineValue is the baseline's figure, in Unit.
	BaselineValue float64 `json:"baselineValue,omitempty"`
	// Ratio is Value / BaselineValue (0 without a baseline).
	Ratio float64 `json:"ratio,omitempty"`
	// HigherIsBetter says which way Ratio favours the store.
	HigherIsBetter bool `json:"higherIsBetter"`
	// Note qualifies the figure (sizes, breakdowns).
	Note string `json:"note,omitempty"`
	// Skipped, when set, says why nothing was measured.
	Skipped string `json:"skipped,omitempty"`
}

// Behind reports whether the store's figure is worse than its baseline's.
func (r Row) Behind() bool {
	if r.Ratio == 0 || r.Skipped != "" {
		return false
	}
	if r.HigherIsBetter {
		return r.Ratio < 1
	}
	return r.Ratio > 1
}

// Series is one curve of a chart.
type Series struct {
	// Chart names the chart the curve belongs to ("open", "mirror").
	Chart string    `json:"chart"`
	Name  string    `json:"name"`
	X     []float64 `json:"x"`
	Y     []float64 `json:"y"`
}

// ItemResult is what one child process measured.
type ItemResult struct {
	Group   string   `json:"group"`
	Rows    []Row    `json:"rows"`
	Series  []Series `json:"series,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Seconds float64  `json:"seconds"`
	// PeakRSSKiB is the child's peak resident set size (getrusage ru_maxrss).
	PeakRSSKiB int64  `json:"peakRssKiB"`
	Error      string `json:"error,omitempty"`
	Skipped    string `json:"skipped,omitempty"`
}

// Report is a whole run.
type Report struct {
	Command string       `json:"command"`
	Date    time.Time    `json:"date"`
	Machine Machine      `json:"machine"`
	Store   string       `json:"store"`
	Mode    string       `json:"mode"`
	Sizes   Sizes        `json:"sizes"`
	Items   []ItemResult `json:"items"`
	Seconds float64      `json:"seconds"`
}

// rows returns every row of the report in item order.
func (r *Report) rows() []Row {
	var out []Row
	for _, it := range r.Items {
		out = append(out, it.Rows...)
	}
	return out
}

// fmtNum prints v with about four significant digits.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a >= 1e6:
		return fmt.Sprintf("%.4g", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.3g", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func fmtRatio(r Row) string {
	if r.Ratio == 0 {
		return "—"
	}
	s := fmt.Sprintf("%.3g×", r.Ratio)
	if r.Behind() {
		s += " (behind)"
	}
	return s
}

func better(r Row) string {
	if r.HigherIsBetter {
		return "higher"
	}
	return "lower"
}

// groupOf returns the result of the child that measured item.
func (r *Report) groupOf(item int) *ItemResult {
	for i := range r.Items {
		for _, row := range r.Items[i].Rows {
			if row.Item == item {
				return &r.Items[i]
			}
		}
	}
	return nil
}

// WriteText writes the results table for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tmeasurement\tstore\tbaseline\tratio\tbetter\tpeak RSS")
	for _, row := range r.rows() {
		rss := ""
		if g := r.groupOf(row.Item); g != nil && g.PeakRSSKiB > 0 {
			rss = fmt.Sprintf("%.0f MiB", float64(g.PeakRSSKiB)/1024)
		}
		if row.Skipped != "" {
			fmt.Fprintf(tw, "%d\t%s\tskipped: %s\t\t\t\t\n", row.Item, row.Name, row.Skipped)
			continue
		}
		base := ""
		if row.Baseline != "" {
			base = fmt.Sprintf("%s %s (%s)", fmtNum(row.BaselineValue), row.Unit, row.Baseline)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s %s\t%s\t%s\t%s\t%s\n", row.Item, row.Name, fmtNum(row.Value), row.Unit, base, fmtRatio(row), better(row), rss)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, it := range r.Items {
		if it.Error != "" {
			fmt.Fprintf(w, "error in %s: %s\n", it.Group, it.Error)
		}
	}
	return nil
}

// WriteJSON writes the report as indented JSON to path.
func (r *Report) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// mdEscape keeps a cell on one table row.
func mdEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// WriteMarkdown writes the results section of BENCHMARKS.md: how the run was made,
// the table, the charts (relative to the markdown file) and the ratios.
func (r *Report) WriteMarkdown(w io.Writer, charts []string, mdDir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", r.Command)
	fmt.Fprintf(&b, "Date: %s  \n", r.Date.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine: %s, %d cores, %.1f GiB RAM, %s, %s  \n", r.Machine.CPU, r.Machine.Cores,
		float64(r.Machine.MemKiB)/(1<<20), r.Machine.GoVersion, r.Machine.OS)
	fmt.Fprintf(&b, "Store: `%s` (mode %s, run took %.0f s)  \n", r.Store, r.Mode, r.Seconds)
	fmt.Fprintf(&b, "Sizes: %s\n\n", r.Sizes.String())
	b.WriteString("| # | measurement | store | baseline | ratio (store / baseline) | better | peak RSS | note |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.rows() {
		rss := ""
		if g := r.groupOf(row.Item); g != nil && g.PeakRSSKiB > 0 {
			rss = fmt.Sprintf("%.0f MiB", float64(g.PeakRSSKiB)/1024)
		}
		if row.Skipped != "" {
			fmt.Fprintf(&b, "| %d | %s | skipped: %s | | | | | |\n", row.Item, mdEscape(row.Name), mdEscape(row.Skipped))
			continue
		}
		base := "—"
		if row.Baseline != "" {
			base = fmt.Sprintf("%s %s (%s)", fmtNum(row.BaselineValue), row.Unit, mdEscape(row.Baseline))
		}
		ratio := fmtRatio(row)
		if row.Behind() {
			ratio = "**" + ratio + "**"
		}
		fmt.Fprintf(&b, "| %d | %s | %s %s | %s | %s | %s | %s | %s |\n", row.Item, mdEscape(row.Name),
			fmtNum(row.Value), row.Unit, base, ratio, better(row), rss, mdEscape(row.Note))
	}
	var notes []string
	for _, it := range r.Items {
		for _, n := range it.Notes {
			notes = append(notes, fmt.Sprintf("%s: %s", it.Group, n))
		}
		if it.Error != "" {
			notes = append(notes, fmt.Sprintf("%s failed: %s", it.Group, it.Error))
		}
		if it.PeakRSSKiB > 0 {
			notes = append(notes, fmt.Sprintf("%s: child process took %.1f s, peak RSS %.0f MiB", it.Group, it.Seconds, float64(it.PeakRSSKiB)/1024))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nRun notes:\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	for _, c := range charts {
		rel, err := filepath.Rel(mdDir, c)
		if err != nil {
			rel = c
		}
		fmt.Fprintf(&b, "\n![%s](%s)\n", strings.TrimSuffix(filepath.Base(c), filepath.Ext(c)), filepath.ToSlash(rel))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
