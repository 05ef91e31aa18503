package main

import (
	"encoding/json"
	"os"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func init() {
	register.DoFn4x1[typex.PaneInfo, typex.Window, typex.EventTime, string, error](&captureFn{})
}

// writeMu serialises appends: the LOOPBACK worker lives in this process and
// may run several bundles (and DoFn instances) at once.
var writeMu sync.Mutex

// record is one output line. Field order and names are what the kit parses.
type record struct {
	Value       string    `json:"value"`
	TimestampMs int64     `json:"timestamp_ms"`
	Window      *[2]int64 `json:"window"` // nil for the global window
	Pane        pane      `json:"pane"`
}

type pane struct {
	First   bool   `json:"first"`
	Last    bool   `json:"last"`
	Timing  string `json:"timing"`
	Index   int64  `json:"index"`
	Nonspec int64  `json:"nonspec"`
}

// captureFn appends every element, with its timestamp, window and pane, to Path.
type captureFn struct {
	Path string
	f    *os.File
}

func (fn *captureFn) Setup() error {
	f, err := os.OpenFile(fn.Path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	fn.f = f
	return err
}

func (fn *captureFn) ProcessElement(pn typex.PaneInfo, w typex.Window, et typex.EventTime, v string) error {
	line, err := json.Marshal(record{
		Value:       v,
		TimestampMs: et.Milliseconds(),
		Window:      windowBounds(w),
		Pane: pane{
			First:   pn.IsFirst,
			Last:    pn.IsLast,
			Timing:  timingName(pn.Timing),
			Index:   pn.Index,
			Nonspec: pn.NonSpeculativeIndex,
		},
	})
	if err != nil {
		return err
	}
	writeMu.Lock()
	defer writeMu.Unlock()
	// One unbuffered write per line, so the line is on disk when the job ends
	// even if Teardown never runs.
	_, err = fn.f.Write(append(line, '\n'))
	return err
}

func (fn *captureFn) Teardown() error {
	if fn.f == nil {
		return nil
	}
	return fn.f.Close()
}

func windowBounds(w typex.Window) *[2]int64 {
	switch w := w.(type) {
	case window.IntervalWindow:
		return &[2]int64{w.Start.Milliseconds(), w.End.Milliseconds()}
	case *window.IntervalWindow:
		return &[2]int64{w.Start.Milliseconds(), w.End.Milliseconds()}
	}
	return nil // global window
}

func timingName(t typex.PaneTiming) string {
	switch t {
	case typex.PaneEarly:
		return "EARLY"
	case typex.PaneOnTime:
		return "ON_TIME"
	case typex.PaneLate:
		return "LATE"
	}
	return "UNKNOWN"
}

// capture attaches captureFn to col, the final PCollection of a case. It is a
// true sink (ParDo0: no output PCollection), as Go pipelines usually end; a
// runner that skips output-less transforms leaves the file empty.
func capture(s beam.Scope, path string, col beam.PCollection) {
	beam.ParDo0(s.Scope("capture"), &captureFn{Path: path}, col)
}
