package dashboard

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

// active reports whether anything happened in minute p.
func active(p admin.StatsPoint) bool {
	return p.Enqueued+p.Processed+p.Failed > 0 || p.WaitP99 > 0 || p.RunP99 > 0
}

// chartWindows are the windows the charts page offers, by query value; the
// stats series keeps a day.
var chartWindows = []struct {
	Key, Span string
	D         time.Duration
}{{"1h", "hour", time.Hour}, {"24h", "24 hours", 24 * time.Hour}}

type chartsData struct {
	Window, Span                string
	Windows                     []string
	Enqueued, Processed, Failed int64
	Charts                      []chart
	Active                      []admin.StatsPoint // minutes with anything in them, newest first
}

func (d *Dashboard) charts(r *http.Request, p *page) (int, error) {
	key := r.URL.Query().Get("window")
	if key == "" {
		key = "1h"
	}
	data := chartsData{Window: key}
	var window time.Duration
	for _, w := range chartWindows {
		data.Windows = append(data.Windows, w.Key)
		if w.Key == key {
			window, data.Span = w.D, w.Span
		}
	}
	if window == 0 {
		return 0, &problem{Status: http.StatusBadRequest, Msg: fmt.Sprintf("unknown chart window %q: want 1h or 24h", key)}
	}
	st, err := d.a.Stats(r.Context(), window)
	if err != nil {
		return 0, err
	}
	for i := len(st.Points) - 1; i >= 0; i-- {
		pt := st.Points[i]
		data.Enqueued += pt.Enqueued
		data.Processed += pt.Processed
		data.Failed += pt.Failed
		if active(pt) {
			data.Active = append(data.Active, pt)
		}
	}
	data.Charts = []chart{countsChart(st.Points, window), timesChart(st.Points, window)}
	p.Title, p.Nav, p.Data = "Charts", "charts", &data
	return http.StatusOK, nil
}

// A chart is drawn twice, at a desktop's and at a phone's width, and the
// stylesheet shows one: an SVG scaled to fit a phone would shrink its
// labels past reading, so each drawing has labels at its own size.
type chart struct {
	ID, Title, Unit string
	Series          []series
	Views           []chartView
}

type series struct{ Key, Label, Note string }

type chartView struct {
	Class                    string // wide or narrow
	W, H                     int
	Left, Right, Top, Bottom float64 // the plot's box
	XTicks, YTicks           []tick
	Lines                    []line
}

type tick struct {
	Pos   float64
	Label string
}

type line struct{ Key, Label, D string }

// geometry is a drawing's size and how many minutes apart its time ticks
// are, by window.
type geometry struct {
	class     string
	w, h      int
	left      float64
	tickEvery map[time.Duration]time.Duration
}

var geometries = []geometry{
	{"wide", 1000, 240, 64, map[time.Duration]time.Duration{time.Hour: 10 * time.Minute, 24 * time.Hour: 3 * time.Hour}},
	{"narrow", 370, 220, 56, map[time.Duration]time.Duration{time.Hour: 20 * time.Minute, 24 * time.Hour: 6 * time.Hour}},
}

// yScale maps a series' value to the fraction of the plot's height.
type yScale struct {
	frac  func(v float64) float64
	ticks []tick // Pos as a fraction of the height
}

func countsChart(pts []admin.StatsPoint, window time.Duration) chart {
	vals := map[string][]float64{}
	var top int64
	total := map[string]int64{}
	for _, p := range pts {
		for k, v := range map[string]int64{"enqueued": p.Enqueued, "processed": p.Processed, "failed": p.Failed} {
			vals[k] = append(vals[k], float64(v))
			total[k] += v
			top = max(top, v)
		}
	}
	step := niceStep(float64(top) / 4)
	hi := step * math.Max(1, math.Ceil(float64(top)/step))
	sc := yScale{frac: func(v float64) float64 { return v / hi }}
	for v := 0.0; v <= hi+step/2; v += step {
		sc.ticks = append(sc.ticks, tick{v / hi, fmt.Sprint(v)})
	}
	ss := []series{
		{"enqueued", "Enqueued", fmt.Sprintf("%d", total["enqueued"])},
		{"processed", "Processed", fmt.Sprintf("%d", total["processed"])},
		{"failed", "Failed", fmt.Sprintf("%d", total["failed"])},
	}
	return draw(chart{ID: "counts", Title: "Jobs per minute", Unit: "jobs / minute", Series: ss}, vals, pts, window, sc, false)
}

// durationTicks are the time axis' labels: round durations an operator
// reads at a glance.
var durationTicks = []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second,
	10 * time.Second, time.Minute, 10 * time.Minute, time.Hour, 10 * time.Hour, 100 * time.Hour}

func timesChart(pts []admin.StatsPoint, window time.Duration) chart {
	vals := map[string][]float64{}
	var top time.Duration
	peak := map[string]time.Duration{}
	for _, p := range pts {
		for k, v := range map[string]time.Duration{"wait-p50": p.WaitP50, "wait-p99": p.WaitP99, "run-p50": p.RunP50, "run-p99": p.RunP99} {
			vals[k] = append(vals[k], float64(v))
			peak[k] = max(peak[k], v)
			top = max(top, v)
		}
	}
	// Times are power-of-two buckets spanning milliseconds to hours: a
	// logarithmic axis keeps p50 visible under a p99 a thousand times it.
	n := 1
	for n < len(durationTicks)-1 && durationTicks[n] < top {
		n++
	}
	lo, hi := math.Log(float64(durationTicks[0])), math.Log(float64(durationTicks[n]))
	sc := yScale{frac: func(v float64) float64 { return (math.Log(v) - lo) / (hi - lo) }}
	for _, t := range durationTicks[:n+1] {
		sc.ticks = append(sc.ticks, tick{sc.frac(float64(t)), short(t)})
	}
	note := func(k string) string {
		if peak[k] == 0 {
			return "none"
		}
		return "max " + short(peak[k])
	}
	ss := []series{
		{"wait-p50", "Wait p50", note("wait-p50")}, {"wait-p99", "Wait p99", note("wait-p99")},
		{"run-p50", "Run p50", note("run-p50")}, {"run-p99", "Run p99", note("run-p99")},
	}
	return draw(chart{ID: "times", Title: "Wait (enqueue → start) and run time", Unit: "p50 and p99, log scale", Series: ss}, vals, pts, window, sc, true)
}

// draw lays the series out in every geometry. With gaps, a zero is a minute
// without a value (nothing started or ran), not a value of zero: the line
// breaks there, and a lone minute is drawn as a short dash.
func draw(c chart, vals map[string][]float64, pts []admin.StatsPoint, window time.Duration, sc yScale, gaps bool) chart {
	for _, g := range geometries {
		v := chartView{Class: g.class, W: g.w, H: g.h, Left: g.left, Right: float64(g.w) - 12, Top: 24, Bottom: float64(g.h) - 26}
		x := func(i int) float64 {
			if len(pts) < 2 {
				return v.Left
			}
			return v.Left + (v.Right-v.Left)*float64(i)/float64(len(pts)-1)
		}
		y := func(f float64) float64 { return v.Bottom - (v.Bottom-v.Top)*f }
		for _, t := range sc.ticks {
			v.YTicks = append(v.YTicks, tick{round1(y(t.Pos)), t.Label})
		}
		every := g.tickEvery[window]
		for i, p := range pts {
			if every > 0 && p.At.Truncate(every).Equal(p.At) {
				v.XTicks = append(v.XTicks, tick{round1(x(i)), p.At.UTC().Format("15:04")})
			}
		}
		for _, s := range c.Series {
			var d strings.Builder
			vs := vals[s.Key]
			for i, val := range vs {
				if gaps && val <= 0 {
					continue
				}
				joined := i > 0 && (!gaps || vs[i-1] > 0)
				if joined {
					d.WriteString("L")
				} else {
					d.WriteString("M")
				}
				lone := !joined && (i == len(vs)-1 || (gaps && vs[i+1] <= 0))
				if lone {
					// A short dash centred on the minute: a lone point of a
					// line would draw nothing.
					fmt.Fprintf(&d, "%.1f %.1fh8", x(i)-4, y(sc.frac(val)))
					continue
				}
				fmt.Fprintf(&d, "%.1f %.1f", x(i), y(sc.frac(val)))
			}
			v.Lines = append(v.Lines, line{s.Key, s.Label, d.String()})
		}
		c.Views = append(c.Views, v)
	}
	return c
}

// niceStep is the smallest of 1, 2 or 5 times a power of ten, at least 1,
// not under v.
func niceStep(v float64) float64 {
	if v <= 1 {
		return 1
	}
	pow := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= v {
			return m * pow
		}
	}
	return 10 * pow
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// short is a duration in its largest unit, as an axis label.
func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return trimZero(d.Seconds()) + "s"
	case d < time.Hour:
		return trimZero(d.Minutes()) + "m"
	}
	return trimZero(d.Hours()) + "h"
}

func trimZero(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}
