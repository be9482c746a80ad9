package main

import (
	"fmt"

	"github.com/schollz/progressbar/v3"
)

// meter shows how far a long command is, on a terminal only: a bar when
// the total is known (embeddings rebuild), a spinner with a count when it
// is not (status reading a project's records, purge). Its text is fixed
// words, the project Scope's IDs and counts: never content. A nil meter
// (output is not a terminal) does nothing; the commands then print their
// plain lines instead.
type meter struct {
	c    *cli
	what string
	bar  *progressbar.ProgressBar
	// known is whether bar was made with a total.
	known bool
}

// newMeter returns a meter labelled what, or nil when the output is not
// a terminal.
func (c *cli) newMeter(what string) *meter {
	if !c.tty {
		return nil
	}
	return &meter{c: c, what: what}
}

// options are the bar's settings: no colours, no rates or time estimates
// (they read the wall clock), redrawn in place and erased when done; the
// count "(done/total)" when the total is known.
func (m *meter) options(known bool) []progressbar.Option {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(m.c.out),
		progressbar.OptionSetDescription(m.what),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(false),
		// 0: the spinner turns on each redraw, with no timer of its own.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionClearOnFinish(),
	}
	if known {
		opts = append(opts, progressbar.OptionShowCount())
	}
	return opts
}

// progress shows done of total; a total of 0 or less shows the count
// alone.
func (m *meter) progress(done, total int) {
	if m == nil {
		return
	}
	if total <= 0 {
		if m.bar == nil {
			m.bar = progressbar.NewOptions(-1, m.options(false)...)
		}
		m.bar.Describe(fmt.Sprintf("%s: %d", m.what, done))
		return
	}
	if m.bar == nil || !m.known {
		m.clear()
		m.bar, m.known = progressbar.NewOptions(total, m.options(true)...), true
	}
	if m.bar.GetMax() != total {
		m.bar.ChangeMax(total)
	}
	if done > total {
		done = total
	}
	_ = m.bar.Set(done) // errors only on a zero total, excluded above
}

// start draws the meter before the first count is known.
func (m *meter) start() {
	if m == nil {
		return
	}
	m.progress(0, 0)
}

// clear erases the meter from the terminal, whether or not it reached
// its total, so the command's own output follows on a clean line.
func (m *meter) clear() {
	if m == nil || m.bar == nil {
		return
	}
	if !m.bar.IsFinished() {
		_ = m.bar.Clear()
		_ = m.bar.Exit()
	}
	m.bar = nil
}
