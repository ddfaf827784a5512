package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a one-line progress bar with the rate and the time left for a phase of known
// length. On a terminal it redraws in place; elsewhere (a log file, CI) it prints a line at
// every tenth of the way, so logs stay short.
type progress struct {
	w        io.Writer
	name     string
	total    int
	from     int // items already done when the bar started (a resumed phase): the rate counts only the others
	unit     string
	start    time.Time
	tty      bool
	lastLine int // tenths printed so far (non-terminal mode)
	last     time.Time
}

// newProgress starts a bar for total items of unit (e.g. "steps").
func newProgress(w io.Writer, name string, total int, unit string) *progress {
	return &progress{w: w, name: name, total: total, unit: unit, start: time.Now(), tty: isTerminal(w), lastLine: -1}
}

// update shows done items out of the total, with extra text (a metric or two) after the bar.
func (p *progress) update(done int, extra string) {
	if p == nil || p.total <= 0 {
		return
	}
	now := time.Now()
	elapsed := now.Sub(p.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done-p.from) / elapsed
	}
	eta := "?"
	if rate > 0 {
		eta = formatDuration(time.Duration(float64(p.total-done) / rate * float64(time.Second)))
	}
	frac := float64(done) / float64(p.total)
	if p.tty {
		if done < p.total && now.Sub(p.last) < 100*time.Millisecond {
			return
		}
		p.last = now
		const width = 24
		filled := int(frac * width)
		bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
		if filled < width {
			bar = bar[:filled] + ">" + bar[filled+1:]
		}
		fmt.Fprintf(p.w, "\r%-6s [%s] %d/%d %s  %.2f %s/s  ETA %s  %s\x1b[K", p.name, bar, done, p.total, p.unit, rate, p.unit, eta, extra)
		if done >= p.total {
			fmt.Fprintln(p.w)
		}
		return
	}
	tenth := int(frac * 10)
	if tenth == p.lastLine && done < p.total {
		return
	}
	p.lastLine = tenth
	fmt.Fprintf(p.w, "%-6s %3.0f%% %d/%d %s  %.2f %s/s  ETA %s  %s\n", p.name, 100*frac, done, p.total, p.unit, rate, p.unit, eta, extra)
}

// formatDuration prints d rounded for humans: "42s", "3m05s", "1h02m".
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()+0.5))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// isTerminal reports whether w is a character device (a terminal), where redrawing a line
// in place works.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
