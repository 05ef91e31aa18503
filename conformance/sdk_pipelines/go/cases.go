package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
)

// cases maps a case name to a builder returning the final PCollection<string>.
var cases = map[string]func(beam.Scope) beam.PCollection{
	"pardo":             pardoCase,
	"flatten":           flattenCase,
	"group_by_key":      groupByKeyCase,
	"combine_per_key":   combinePerKeyCase,
	"side_input":        sideInputCase,
	"state_timer":       stateTimerCase,
	"windowed_trigger":  windowedTriggerCase,
	"map_state":         mapStateCase,
	"set_state":         setStateCase,
	"test_stream":       testStreamCase,
	"test_stream_int16": testStreamInt16Case,
}

// Registering every function and DoFn lets the worker find them without
// falling back to reflection over the binary's symbol table.
func init() {
	register.Function2x0(splitWords)
	register.Emitter1[string]()
	register.Function1x3(parseKV)
	register.Function1x4(parseTimedKV)
	register.Function2x1(formatGrouped)
	register.Iter1[int]()
	register.Function2x1(sumInts)
	register.Function2x1(formatSum)
	register.Function2x1(addSide)
	register.Function1x1(formatInt16)
	register.DoFn5x1[state.Provider, timers.Provider, string, int, func(string), error](&sumThenFireFn{})
	register.Function1x4(parseTimedWord)
	register.DoFn6x1[beam.Window, state.Provider, timers.Provider, string, string, func(string), error](&mapStateFn{})
	register.DoFn6x1[beam.Window, state.Provider, timers.Provider, string, string, func(string), error](&setStateFn{})
}

func pardoCase(s beam.Scope) beam.PCollection {
	lines := beam.Create(s, "a b", "b c", "c")
	return beam.ParDo(s, splitWords, lines)
}

func splitWords(line string, emit func(string)) {
	for _, w := range strings.Fields(line) {
		emit(w)
	}
}

func flattenCase(s beam.Scope) beam.PCollection {
	return beam.Flatten(s, beam.Create(s, "x", "y"), beam.Create(s, "z"))
}

// keyedInts builds KV<string,int> from "key=value" strings. Strings keep the
// Create payload on the standard string coder instead of a struct/row coder.
func keyedInts(s beam.Scope, pairs ...any) beam.PCollection {
	return beam.ParDo(s, parseKV, beam.Create(s, pairs...))
}

func parseKV(pair string) (string, int, error) {
	k, v, _ := strings.Cut(pair, "=")
	n, err := strconv.Atoi(v)
	return k, n, err
}

func groupByKeyCase(s beam.Scope) beam.PCollection {
	kvs := keyedInts(s, "a=1", "b=2", "a=3")
	return beam.ParDo(s, formatGrouped, beam.GroupByKey(s, kvs))
}

// formatGrouped renders a grouped key as "key:v1,v2,..." with values sorted,
// since GroupByKey gives no order.
func formatGrouped(key string, values func(*int) bool) string {
	var vs []int
	var v int
	for values(&v) {
		vs = append(vs, v)
	}
	sort.Ints(vs)
	parts := make([]string, len(vs))
	for i, n := range vs {
		parts[i] = strconv.Itoa(n)
	}
	return key + ":" + strings.Join(parts, ",")
}

func combinePerKeyCase(s beam.Scope) beam.PCollection {
	kvs := keyedInts(s, "a=1", "b=2", "a=3")
	// A binary func is the SDK's simplest CombineFn; it is still translated
	// as a beam:transform:combine_per_key:v1 composite.
	sums := beam.CombinePerKey(s, sumInts, kvs)
	return beam.ParDo(s, formatSum, sums)
}

func sumInts(a, b int) int { return a + b }

func formatSum(key string, sum int) string { return fmt.Sprintf("%s:%d", key, sum) }

func sideInputCase(s beam.Scope) beam.PCollection {
	main := beam.Create(s, 1, 2, 3)
	side := beam.Create(s, 10)
	return beam.ParDo(s, addSide, main, beam.SideInput{Input: side})
}

// addSide's plain int second parameter makes the side input a singleton.
func addSide(x, side int) string { return strconv.Itoa(x + side) }

func stateTimerCase(s beam.Scope) beam.PCollection {
	kvs := keyedInts(s, "a=1", "a=2", "b=5")
	return beam.ParDo(s, &sumThenFireFn{
		Sum:  state.MakeValueState[int]("sum"),
		Fire: timers.InEventTime("fire"),
	}, kvs)
}

// sumThenFireFn keeps a running sum per key and emits "key:sum" from an
// event-time timer at 1s, i.e. once the watermark has passed all input.
type sumThenFireFn struct {
	Sum  state.Value[int]
	Fire timers.EventTime
}

var fireAt = mtime.FromMilliseconds(1000).ToTime()

// ProcessElement never emits, but the SDK requires it to declare the same
// emitters as OnTimer.
func (fn *sumThenFireFn) ProcessElement(sp state.Provider, tp timers.Provider, key string, v int, _ func(string)) error {
	sum, _, err := fn.Sum.Read(sp)
	if err != nil {
		return err
	}
	if err := fn.Sum.Write(sp, sum+v); err != nil {
		return err
	}
	fn.Fire.Set(tp, fireAt)
	return nil
}

func (fn *sumThenFireFn) OnTimer(sp state.Provider, tp timers.Provider, key string, timer timers.Context, emit func(string)) error {
	sum, _, err := fn.Sum.Read(sp)
	if err != nil {
		return err
	}
	emit(formatSum(key, sum))
	return nil
}

func windowedTriggerCase(s beam.Scope) beam.PCollection {
	lines := beam.Create(s,
		"a=1@1000", "a=2@2000", "a=3@3000", "a=4@4000", "a=5@5000",
		"a=11@11000", "b=7@3000")
	kvs := beam.ParDo(s, parseTimedKV, lines)
	windowed := beam.WindowInto(s, window.NewFixedWindows(10*time.Second), kvs,
		beam.Trigger(trigger.AfterEndOfWindow().EarlyFiring(trigger.AfterCount(2))),
		beam.PanesAccumulate(),
		beam.AllowedLateness(0))
	return beam.ParDo(s, formatGrouped, beam.GroupByKey(s, windowed))
}

// parseTimedKV parses "key=value@millis" and gives the element that event time.
func parseTimedKV(line string) (typex.EventTime, string, int, error) {
	pair, at, _ := strings.Cut(line, "@")
	ms, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return 0, "", 0, err
	}
	k, v, err := parseKV(pair)
	return mtime.FromMilliseconds(ms), k, v, err
}

// testStreamCase is a TestStream of strings. Go writes a TestStream's events
// with its element encoder, which gives a string its length first.
func testStreamCase(s beam.Scope) beam.PCollection {
	c := teststream.NewConfig()
	must(c.AddElements(1000, "a"))
	must(c.AddElements(2000, "b", "c"))
	must(c.AdvanceWatermarkToInfinity())
	return teststream.Create(s, c)
}

// testStreamInt16Case is a TestStream of a type Go codes with a coder of its
// own (beam:go:coder:custom:v1): the events name that coder, the output a
// length prefix around it.
func testStreamInt16Case(s beam.Scope) beam.PCollection {
	c := teststream.NewConfig()
	must(c.AddElements(1000, int16(-7), int16(300)))
	must(c.AdvanceWatermarkToInfinity())
	return beam.ParDo(s, formatInt16, teststream.Create(s, c))
}

func formatInt16(n int16) string { return strconv.Itoa(int(n)) }

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// timedWords gives each user key's words event times in 10s fixed windows: key a has apple
// (twice) and pear in [0s, 10s) and fig in [10s, 20s); key b has apple and kiwi in [20s, 30s).
// (No two keys share a window: see the Java program's timedWords.)
func timedWords(s beam.Scope) beam.PCollection {
	lines := beam.Create(s, "a=apple@1000", "a=pear@2000", "a=apple@3000", "a=fig@12000", "b=apple@21000", "b=kiwi@22000")
	return beam.WindowInto(s, window.NewFixedWindows(10*time.Second), beam.ParDo(s, parseTimedWord, lines))
}

// parseTimedWord parses "key=word@millis" and gives the element that event time.
func parseTimedWord(line string) (typex.EventTime, string, string, error) {
	pair, at, _ := strings.Cut(line, "@")
	ms, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return 0, "", "", err
	}
	k, w, _ := strings.Cut(pair, "=")
	return mtime.FromMilliseconds(ms), k, w, nil
}

// setPhases sets the three phases' event-time timers of the element's key and window, at 2s,
// 1s and 0s before the window's max timestamp. They fire after every element of the window, in
// that order, so each phase reads what the phase before left (from the runner, when the timers
// fire in bundles after the one that wrote it, as on our runners).
func setPhases(phase timers.EventTime, tp timers.Provider, w beam.Window) {
	end := w.MaxTimestamp()
	for i := 1; i <= 3; i++ {
		at := end.Subtract(time.Duration(3-i) * time.Second)
		phase.Set(tp, at.ToTime(), timers.WithTag(strconv.Itoa(i)))
	}
}

func mapStateCase(s beam.Scope) beam.PCollection {
	return beam.ParDo(s, &mapStateFn{
		Counts: state.MakeMapState[string, int]("counts"),
		Phase:  timers.InEventTime("phase"),
	}, timedWords(s))
}

// mapStateFn counts each key's words per window in map state (word -> count). Phase 1 emits
// "key:word=count,..." and removes apple, phase 2 emits and clears the map, phase 3 emits.
type mapStateFn struct {
	Counts state.Map[string, int]
	Phase  timers.EventTime
}

func (fn *mapStateFn) ProcessElement(w beam.Window, sp state.Provider, tp timers.Provider, key, word string, _ func(string)) error {
	n, _, err := fn.Counts.Get(sp, word)
	if err != nil {
		return err
	}
	if err := fn.Counts.Put(sp, word, n+1); err != nil {
		return err
	}
	setPhases(fn.Phase, tp, w)
	return nil
}

func (fn *mapStateFn) OnTimer(sp state.Provider, tp timers.Provider, key string, timer timers.Context, emit func(string)) error {
	words, _, err := fn.Counts.Keys(sp)
	if err != nil {
		return err
	}
	sort.Strings(words)
	parts := make([]string, len(words))
	for i, word := range words {
		n, _, err := fn.Counts.Get(sp, word)
		if err != nil {
			return err
		}
		parts[i] = fmt.Sprintf("%s=%d", word, n)
	}
	emit(key + ":" + strings.Join(parts, ","))
	switch timer.Tag {
	case "1":
		return fn.Counts.Remove(sp, "apple")
	case "2":
		return fn.Counts.Clear(sp)
	}
	return nil
}

func setStateCase(s beam.Scope) beam.PCollection {
	return beam.ParDo(s, &setStateFn{
		Words: state.MakeSetState[string]("words"),
		Phase: timers.InEventTime("phase"),
	}, timedWords(s))
}

// setStateFn keeps each key's distinct words per window in set state. Phase 1 emits
// "key:word,...;apple=<contains apple>" and removes apple, phase 2 emits and clears the set,
// phase 3 emits.
type setStateFn struct {
	Words state.Set[string]
	Phase timers.EventTime
}

func (fn *setStateFn) ProcessElement(w beam.Window, sp state.Provider, tp timers.Provider, key, word string, _ func(string)) error {
	if err := fn.Words.Add(sp, word); err != nil {
		return err
	}
	setPhases(fn.Phase, tp, w)
	return nil
}

func (fn *setStateFn) OnTimer(sp state.Provider, tp timers.Provider, key string, timer timers.Context, emit func(string)) error {
	words, _, err := fn.Words.Keys(sp)
	if err != nil {
		return err
	}
	sort.Strings(words)
	apple, err := fn.Words.Contains(sp, "apple")
	if err != nil {
		return err
	}
	emit(fmt.Sprintf("%s:%s;apple=%t", key, strings.Join(words, ","), apple))
	switch timer.Tag {
	case "1":
		return fn.Words.Remove(sp, "apple")
	case "2":
		return fn.Words.Clear(sp)
	}
	return nil
}
