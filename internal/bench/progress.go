package bench

import (
	"fmt"
	"io"
	"os"
	"time"

	"anykv/internal/bench/workload"
)

// isTerminal reports whether w is a terminal (a character device other
// than /dev/null), without golang.org/x/term.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(st, null) {
		return false
	}
	return true
}

// progress shows a live line for r's current phase on a terminal: ops
// done, rate, p99 so far and time left. It returns a function that stops it.
func (b *bencher) progress(r *workload.Runner) func() {
	if !b.live {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				l, ok := r.Live()
				b.mu.Lock()
				if ok {
					fmt.Fprint(b.stdout, "\r\033[K"+progressLine(r.Target, l))
				} else {
					fmt.Fprint(b.stdout, "\r\033[K")
				}
				b.mu.Unlock()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		b.mu.Lock()
		fmt.Fprint(b.stdout, "\r\033[K")
		b.mu.Unlock()
	}
}

// progressLine formats one progress update.
func progressLine(target string, l workload.Live) string {
	rate := 0.0
	if s := l.Elapsed.Seconds(); s > 0 {
		rate = float64(l.Done) / s
	}
	left := "?"
	if rate > 0 && l.Total > l.Done {
		rem := time.Duration(float64(l.Total-l.Done) / rate * float64(time.Second))
		if l.Cap > 0 && l.Cap-l.Elapsed < rem {
			rem = max(0, l.Cap-l.Elapsed)
		}
		left = rem.Round(time.Second).String()
	}
	return fmt.Sprintf("%s %s/%s thr=%d  %d/%d ops  %.0f/s  p99 %.3fms  ~%s left",
		target, l.Workload, l.Phase, l.Threads, l.Done, l.Total, rate, float64(l.P99)/1e6, left)
}
