package beamconformance;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import org.apache.beam.runners.portability.PortableRunner;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.coders.BigEndianLongCoder;
import org.apache.beam.sdk.coders.Coder;
import org.apache.beam.sdk.coders.CustomCoder;
import org.apache.beam.sdk.coders.KvCoder;
import org.apache.beam.sdk.coders.NullableCoder;
import org.apache.beam.sdk.coders.SerializableCoder;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.apache.beam.sdk.coders.VarIntCoder;
import org.apache.beam.sdk.coders.VarLongCoder;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.options.PortablePipelineOptions;
import org.apache.beam.sdk.schemas.FieldAccessDescriptor;
import org.apache.beam.sdk.schemas.JavaFieldSchema;
import org.apache.beam.sdk.schemas.annotations.DefaultSchema;
import org.apache.beam.sdk.state.MapState;
import org.apache.beam.sdk.state.SetState;
import org.apache.beam.sdk.state.StateSpec;
import org.apache.beam.sdk.state.StateSpecs;
import org.apache.beam.sdk.state.TimeDomain;
import org.apache.beam.sdk.state.Timer;
import org.apache.beam.sdk.state.TimerSpec;
import org.apache.beam.sdk.state.TimerSpecs;
import org.apache.beam.sdk.state.ValueState;
import org.apache.beam.sdk.transforms.Combine;
import org.apache.beam.sdk.transforms.Create;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.FlatMapElements;
import org.apache.beam.sdk.transforms.Flatten;
import org.apache.beam.sdk.transforms.GroupByKey;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.transforms.Reshuffle;
import org.apache.beam.sdk.transforms.Sum;
import org.apache.beam.sdk.transforms.View;
import org.apache.beam.sdk.transforms.windowing.AfterPane;
import org.apache.beam.sdk.transforms.windowing.AfterWatermark;
import org.apache.beam.sdk.transforms.windowing.BoundedWindow;
import org.apache.beam.sdk.transforms.windowing.FixedWindows;
import org.apache.beam.sdk.transforms.windowing.GlobalWindow;
import org.apache.beam.sdk.transforms.windowing.IntervalWindow;
import org.apache.beam.sdk.transforms.windowing.PaneInfo;
import org.apache.beam.sdk.transforms.windowing.Window;
import org.apache.beam.sdk.transforms.windowing.WindowFn;
import org.apache.beam.sdk.transforms.windowing.WindowMappingFn;
import org.apache.beam.sdk.util.WindowedValue;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;
import org.apache.beam.sdk.values.PCollectionList;
import org.apache.beam.sdk.values.PCollectionView;
import org.apache.beam.sdk.values.Row;
import org.apache.beam.sdk.values.TimestampedValue;
import org.apache.beam.sdk.values.TypeDescriptors;
import org.joda.time.Duration;
import org.joda.time.Instant;

/**
 * Runs one named Java SDK test pipeline on a Beam Job API endpoint with the LOOPBACK environment
 * and writes every element of its final PCollection, with timestamp, window and pane, as JSON
 * lines (see {@link CaptureFn}).
 *
 * <pre>SdkPipelines --case=NAME --endpoint=HOST:PORT --output=PATH [other Beam options]</pre>
 *
 * <p>Exit codes: 0 job DONE, 1 job not DONE (or submission failed), 2 usage error / unknown case.
 */
public final class SdkPipelines {

  private static final KvCoder<String, Integer> KV_CODER =
      KvCoder.of(StringUtf8Coder.of(), VarIntCoder.of());

  /** Case name -> builder of the pipeline; each returns the PCollection to capture. */
  private static final Map<String, Function<Pipeline, PCollection<String>>> CASES =
      new LinkedHashMap<>();

  static {
    CASES.put("pardo", SdkPipelines::pardo);
    CASES.put("flatten", SdkPipelines::flatten);
    CASES.put("group_by_key", SdkPipelines::groupByKey);
    CASES.put("combine_per_key", SdkPipelines::combinePerKey);
    CASES.put("side_input", SdkPipelines::sideInput);
    CASES.put("state_timer", SdkPipelines::stateTimer);
    CASES.put("windowed_trigger", SdkPipelines::windowedTrigger);
    CASES.put("custom_merging_window", SdkPipelines::customMergingWindow);
    CASES.put("reshuffle_metadata", SdkPipelines::reshuffleMetadata);
    CASES.put("flatten_coders", SdkPipelines::flattenCoders);
    CASES.put("schema_pardo", SdkPipelines::schemaPardo);
    CASES.put("map_state", SdkPipelines::mapState);
    CASES.put("set_state", SdkPipelines::setState);
  }

  private SdkPipelines() {}

  public static void main(String[] args) throws Exception {
    // Timestamped log lines (slf4j-simple, stderr) make slow runner steps visible.
    System.setProperty(
        "org.slf4j.simpleLogger.showDateTime",
        System.getProperty("org.slf4j.simpleLogger.showDateTime", "true"));
    System.setProperty(
        "org.slf4j.simpleLogger.dateTimeFormat",
        System.getProperty("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS"));
    String caseName = null;
    String endpoint = null;
    String output = null;
    List<String> beamArgs = new ArrayList<>();
    for (String arg : args) {
      if (arg.equals("--list")) {
        CASES.keySet().forEach(System.out::println);
        System.exit(0);
      } else if (arg.startsWith("--case=")) {
        caseName = arg.substring("--case=".length());
      } else if (arg.startsWith("--endpoint=")) {
        endpoint = arg.substring("--endpoint=".length());
      } else if (arg.startsWith("--output=")) {
        output = arg.substring("--output=".length());
      } else {
        beamArgs.add(arg); // anything else is a Beam pipeline option
      }
    }
    if (caseName == null || endpoint == null || output == null) {
      System.err.println(
          "usage: SdkPipelines --case=NAME --endpoint=HOST:PORT --output=PATH [beam options]"
              + " | --list");
      System.exit(2);
    }
    Function<Pipeline, PCollection<String>> builder = CASES.get(caseName);
    if (builder == null) {
      System.err.println("unknown case: " + caseName + "; known cases:");
      CASES.keySet().forEach(System.err::println);
      System.exit(2);
    }

    PortablePipelineOptions options =
        PipelineOptionsFactory.fromArgs(beamArgs.toArray(new String[0]))
            .as(PortablePipelineOptions.class);
    options.setRunner(PortableRunner.class);
    options.setJobEndpoint(endpoint);
    // LOOPBACK: PortableRunner starts a worker pool service in this JVM, and the runner asks it
    // for SDK harnesses instead of launching a container or process.
    options.setDefaultEnvironmentType("LOOPBACK");
    options.setJobName("sdk-pipelines-" + caseName.replace('_', '-'));

    // Start from an empty file so that reruns do not mix outputs; a job that emits nothing
    // still leaves an (empty) file behind.
    Path outputPath = Paths.get(output).toAbsolutePath();
    Files.write(outputPath, new byte[0]);

    Pipeline pipeline = Pipeline.create(options);
    builder.apply(pipeline).apply("Capture", ParDo.of(new CaptureFn(outputPath.toString())));

    PipelineResult result = null;
    PipelineResult.State state = null;
    Throwable error = null;
    try {
      result = pipeline.run();
      // Throws when the job ends in a state other than DONE and the runner sent an error message.
      state = result.waitUntilFinish();
    } catch (RuntimeException e) {
      error = e;
    }
    if (state == null && result != null) {
      try {
        state = result.getState();
      } catch (RuntimeException e) {
        // The job service may be gone by now; the original error is what matters.
      }
    }
    if (state == PipelineResult.State.DONE && error == null) {
      System.exit(0);
    }
    System.err.println(
        state == null
            ? "Job for case " + caseName + " did not reach a terminal state (submission failed?)"
            : "Job for case " + caseName + " ended in state " + state);
    if (error != null) {
      System.err.println("Error:");
      error.printStackTrace(System.err);
    }
    // gRPC threads of the runner and worker service may still be alive: exit explicitly.
    System.exit(1);
  }

  // ---------------------------------------------------------------- cases

  static PCollection<String> pardo(Pipeline p) {
    return p.apply(Create.of("a b", "b c", "c"))
        .apply(
            "Split",
            FlatMapElements.into(TypeDescriptors.strings())
                .via((String line) -> Arrays.asList(line.split(" "))));
  }

  static PCollection<String> flatten(Pipeline p) {
    PCollection<String> first = p.apply("CreateXY", Create.of("x", "y"));
    PCollection<String> second = p.apply("CreateZ", Create.of("z"));
    return PCollectionList.of(first).and(second).apply(Flatten.pCollections());
  }

  /**
   * A Flatten whose inputs and output have three different coders of Java's own, none a standard
   * coder a runner reads: only the SDK can re-encode its inputs as its output.
   */
  static PCollection<String> flattenCoders(Pipeline p) {
    PCollection<Long> bigEndian =
        p.apply("BigEndianLongs", Create.of(1L, 2L).withCoder(BigEndianLongCoder.of()));
    PCollection<Long> nullable =
        p.apply("NullableLongs", Create.of(3L).withCoder(NullableCoder.of(VarLongCoder.of())));
    return PCollectionList.of(bigEndian)
        .and(nullable)
        .apply(Flatten.pCollections())
        .setCoder(SerializableCoder.of(Long.class))
        .apply("Format", MapElements.into(TypeDescriptors.strings()).via((Long n) -> Long.toString(n)));
  }

  static PCollection<String> groupByKey(Pipeline p) {
    return createKvs(p).apply(GroupByKey.create()).apply("Format", formatGroups());
  }

  static PCollection<String> combinePerKey(Pipeline p) {
    return createKvs(p)
        .apply(Combine.perKey(Sum.ofIntegers()))
        .apply(
            "Format",
            MapElements.into(TypeDescriptors.strings())
                .via((KV<String, Integer> kv) -> kv.getKey() + ":" + kv.getValue()));
  }

  static PCollection<String> sideInput(Pipeline p) {
    PCollectionView<Integer> side = p.apply("CreateSide", Create.of(10)).apply(View.asSingleton());
    return p.apply("CreateMain", Create.of(1, 2, 3))
        .apply("AddSide", ParDo.of(new AddSideFn(side)).withSideInputs(side));
  }

  static PCollection<String> stateTimer(Pipeline p) {
    return p.apply(Create.of(KV.of("a", 1), KV.of("a", 2), KV.of("b", 5)).withCoder(KV_CODER))
        .apply("SumThenFlush", ParDo.of(new SumUntilTimerFn()));
  }

  static PCollection<String> windowedTrigger(Pipeline p) {
    return p.apply(
            Create.timestamped(
                    at("a", 1, 1),
                    at("a", 2, 2),
                    at("a", 3, 3),
                    at("a", 4, 4),
                    at("a", 5, 5),
                    at("a", 11, 11),
                    at("b", 7, 3))
                .withCoder(KV_CODER))
        .apply(
            Window.<KV<String, Integer>>into(FixedWindows.of(Duration.standardSeconds(10)))
                .triggering(
                    AfterWatermark.pastEndOfWindow()
                        .withEarlyFirings(AfterPane.elementCountAtLeast(2)))
                .withAllowedLateness(Duration.ZERO)
                .accumulatingFiredPanes())
        .apply(GroupByKey.create())
        .apply("Format", formatGroups());
  }

  static PCollection<String> customMergingWindow(Pipeline p) {
    return p.apply(
            Create.timestamped(
                    at("a", 1, 1), at("a", 9, 9), at("a", 11, 11), at("a", 25, 25), at("b", 4, 4))
                .withCoder(KV_CODER))
        .apply(Window.<KV<String, Integer>>into(new TenSecondBuckets()))
        .apply(GroupByKey.create())
        .apply("Format", formatGroups());
  }

  /**
   * Elements made with their own timestamp, window and pane (Create.windowedValues, whose first
   * PCollection holds the windowed values themselves), then reshuffled: each keeps all three.
   */
  static PCollection<String> reshuffleMetadata(Pipeline p) {
    return p.apply(
            Create.windowedValues(
                    WindowedValue.of(
                        "a", new Instant(5_000), GlobalWindow.INSTANCE, PaneInfo.NO_FIRING),
                    WindowedValue.of(
                        "b",
                        new Instant(7_000),
                        GlobalWindow.INSTANCE,
                        PaneInfo.createPane(false, false, PaneInfo.Timing.LATE, 1, 1)))
                .withCoder(StringUtf8Coder.of())
                .withWindowCoder(GlobalWindow.Coder.INSTANCE))
        .apply(Reshuffle.viaRandomKey());
  }

  /**
   * Schema'd elements through two fused ParDos: the first reads each Purchase as a Row and writes
   * Rows to its Purchase output, the second reads selected fields. The SDK harness finds both
   * schemas on the PCollections' coders in the bundle descriptor.
   */
  static PCollection<String> schemaPardo(Pipeline p) {
    return p.apply(Create.of(new Purchase("apple", 2), new Purchase("pear", 3)))
        .apply("DoubleQuantity", ParDo.of(new DoubleQuantityFn()))
        .apply("Format", ParDo.of(new FormatPurchaseFn()));
  }

  static PCollection<String> mapState(Pipeline p) {
    return timedWords(p).apply("MapState", ParDo.of(new MapStateFn()));
  }

  static PCollection<String> setState(Pipeline p) {
    return timedWords(p).apply("SetState", ParDo.of(new SetStateFn()));
  }

  // ---------------------------------------------------------------- helpers

  /**
   * Each user key's words at event times in 10s fixed windows: key a has apple (twice) and pear
   * in [0s, 10s) and fig in [10s, 20s); key b has apple and kiwi in [20s, 30s).
   *
   * <p>No two keys share a window: the Java SDK harness of Beam 2.65.0 leaves the user key out
   * of its map and set state's state keys (FnApiStateAccessor.createMultimapKeysUserStateKey sets
   * the window only), so on any runner the keys of one window would share one map.
   */
  private static PCollection<KV<String, String>> timedWords(Pipeline p) {
    return p.apply(
            Create.timestamped(
                    word("a", "apple", 1000),
                    word("a", "pear", 2000),
                    word("a", "apple", 3000),
                    word("a", "fig", 12000),
                    word("b", "apple", 21000),
                    word("b", "kiwi", 22000))
                .withCoder(KvCoder.of(StringUtf8Coder.of(), StringUtf8Coder.of())))
        .apply(Window.into(FixedWindows.of(Duration.standardSeconds(10))));
  }

  private static TimestampedValue<KV<String, String>> word(String key, String word, long millis) {
    return TimestampedValue.of(KV.of(key, word), new Instant(millis));
  }

  /**
   * The three phases' event-time timers of the element's key and window, at 2s, 1s and 0s before
   * the window's max timestamp. They fire after every element of the window, in that order, so
   * each phase reads what the phase before left (from the runner, when the timers fire in bundles
   * after the one that wrote it, as on our runners).
   */
  private static void setPhases(BoundedWindow window, Timer phase1, Timer phase2, Timer phase3) {
    Instant end = window.maxTimestamp();
    phase1.set(end.minus(Duration.standardSeconds(2)));
    phase2.set(end.minus(Duration.standardSeconds(1)));
    phase3.set(end);
  }

  private static PCollection<KV<String, Integer>> createKvs(Pipeline p) {
    return p.apply(Create.of(KV.of("a", 1), KV.of("b", 2), KV.of("a", 3)).withCoder(KV_CODER));
  }

  private static TimestampedValue<KV<String, Integer>> at(String key, int value, long seconds) {
    return TimestampedValue.of(KV.of(key, value), new Instant(seconds * 1000));
  }

  /** "key:v1,v2,..." with the values sorted, since GroupByKey gives no order. */
  private static MapElements<KV<String, Iterable<Integer>>, String> formatGroups() {
    return MapElements.into(TypeDescriptors.strings())
        .via(
            (KV<String, Iterable<Integer>> kv) -> {
              List<Integer> values = new ArrayList<>();
              kv.getValue().forEach(values::add);
              values.sort(null);
              StringBuilder sb = new StringBuilder(kv.getKey()).append(':');
              for (int i = 0; i < values.size(); i++) {
                sb.append(i == 0 ? "" : ",").append(values.get(i));
              }
              return sb.toString();
            });
  }

  /**
   * A merging WindowFn no runner knows: each element gets the one-second window from its timestamp,
   * and the windows of a key that start in the same ten-second bucket merge into their span, near
   * or not (so [1 s, 2 s) and [9 s, 10 s) merge, [9 s, 10 s) and [11 s, 12 s) do not: no
   * sessions). Its windows are of a type of its own with a coder of its own, which the runner can
   * only carry as opaque bytes.
   */
  static class TenSecondBuckets extends WindowFn<Object, BucketWindow> {
    @Override
    public Collection<BucketWindow> assignWindows(AssignContext c) {
      Instant start = c.timestamp();
      return Collections.singletonList(
          new BucketWindow(start, start.plus(Duration.standardSeconds(1))));
    }

    @Override
    public void mergeWindows(MergeContext c) throws Exception {
      Map<Long, List<BucketWindow>> buckets = new TreeMap<>();
      for (BucketWindow w : c.windows()) {
        buckets.computeIfAbsent(w.start().getMillis() / 10_000, b -> new ArrayList<>()).add(w);
      }
      for (List<BucketWindow> bucket : buckets.values()) {
        if (bucket.size() > 1) {
          Instant start = bucket.stream().map(BucketWindow::start).min(Instant::compareTo).get();
          Instant end = bucket.stream().map(BucketWindow::end).max(Instant::compareTo).get();
          c.merge(bucket, new BucketWindow(start, end));
        }
      }
    }

    @Override
    public boolean isCompatible(WindowFn<?, ?> other) {
      return other instanceof TenSecondBuckets;
    }

    @Override
    public Coder<BucketWindow> windowCoder() {
      return new BucketWindowCoder();
    }

    @Override
    public WindowMappingFn<BucketWindow> getDefaultWindowMappingFn() {
      throw new UnsupportedOperationException("TenSecondBuckets cannot window a side input");
    }
  }

  /** An interval window of a type of its own (CaptureFn records it as an interval). */
  static class BucketWindow extends IntervalWindow {
    BucketWindow(Instant start, Instant end) {
      super(start, end);
    }
  }

  /** Start and end in milliseconds, as two big-endian longs. */
  static class BucketWindowCoder extends CustomCoder<BucketWindow> {
    @Override
    public void encode(BucketWindow w, OutputStream out) throws IOException {
      DataOutputStream data = new DataOutputStream(out);
      data.writeLong(w.start().getMillis());
      data.writeLong(w.end().getMillis());
      data.flush();
    }

    @Override
    public BucketWindow decode(InputStream in) throws IOException {
      DataInputStream data = new DataInputStream(in);
      long start = data.readLong();
      return new BucketWindow(new Instant(start), new Instant(data.readLong()));
    }

    @Override
    public void verifyDeterministic() {}
  }

  /** Adds the singleton side input to each main-input element. */
  static class AddSideFn extends DoFn<Integer, String> {
    private final PCollectionView<Integer> side;

    AddSideFn(PCollectionView<Integer> side) {
      this.side = side;
    }

    @ProcessElement
    public void process(ProcessContext c) {
      c.output(String.valueOf(c.element() + c.sideInput(side)));
    }
  }

  /**
   * Sums values per key in state and emits "key:sum" from an event-time timer at 1000 ms, so the
   * output carries the timer's timestamp rather than the elements' (minimum) timestamp.
   */
  static class SumUntilTimerFn extends DoFn<KV<String, Integer>, String> {
    @StateId("sum")
    private final StateSpec<ValueState<Integer>> sumSpec = StateSpecs.value(VarIntCoder.of());

    @TimerId("flush")
    private final TimerSpec flushSpec = TimerSpecs.timer(TimeDomain.EVENT_TIME);

    @ProcessElement
    public void process(
        @Element KV<String, Integer> element,
        @StateId("sum") ValueState<Integer> sum,
        @TimerId("flush") Timer flush) {
      Integer current = sum.read();
      sum.write((current == null ? 0 : current) + element.getValue());
      flush.set(new Instant(1000));
    }

    @OnTimer("flush")
    public void onFlush(
        @Key String key, @StateId("sum") ValueState<Integer> sum, OutputReceiver<String> out) {
      Integer total = sum.read();
      out.output(key + ":" + (total == null ? 0 : total));
      sum.clear();
    }
  }

  /**
   * A schema'd type: its schema is inferred from its public fields (the SDK sets them after the
   * no-argument constructor: its constructor's parameter names are not in the class file).
   */
  @DefaultSchema(JavaFieldSchema.class)
  public static class Purchase {
    public String item;
    public int quantity;

    public Purchase() {}

    Purchase(String item, int quantity) {
      this.item = item;
      this.quantity = quantity;
    }
  }

  /** Reads a Purchase as a Row; writes a Row of the output's (Purchase) schema, quantity doubled. */
  static class DoubleQuantityFn extends DoFn<Purchase, Purchase> {
    @ProcessElement
    public void process(@Element Row purchase, OutputReceiver<Row> out) {
      out.output(
          Row.withSchema(purchase.getSchema())
              .withFieldValue("item", purchase.getString("item"))
              .withFieldValue("quantity", purchase.getInt32("quantity") * 2)
              .build());
    }
  }

  /** "item:quantity", from the two fields it asks for by name. */
  static class FormatPurchaseFn extends DoFn<Purchase, String> {
    @FieldAccess("fields")
    final FieldAccessDescriptor fields = FieldAccessDescriptor.withFieldNames("item", "quantity");

    @ProcessElement
    public void process(@FieldAccess("fields") Row purchase, OutputReceiver<String> out) {
      out.output(purchase.getString("item") + ":" + purchase.getInt32("quantity"));
    }
  }

  /**
   * Counts each key's words per window in map state (word -> count). Phase 1 emits
   * "key:word=count,..." and removes apple, phase 2 emits and clears the map, phase 3 emits.
   */
  static class MapStateFn extends DoFn<KV<String, String>, String> {
    @StateId("counts")
    private final StateSpec<MapState<String, Integer>> countsSpec =
        StateSpecs.map(StringUtf8Coder.of(), VarIntCoder.of());

    @TimerId("phase1")
    private final TimerSpec phase1Spec = TimerSpecs.timer(TimeDomain.EVENT_TIME);

    @TimerId("phase2")
    private final TimerSpec phase2Spec = TimerSpecs.timer(TimeDomain.EVENT_TIME);

    @TimerId("phase3")
    private final TimerSpec phase3Spec = TimerSpecs.timer(TimeDomain.EVENT_TIME);

    @ProcessElement
    public void process(
        @Element KV<String, String> element,
        BoundedWindow window,
        @StateId("counts") MapState<String, Integer> counts,
        @TimerId("phase1") Timer phase1,
        @TimerId("phase2") Timer phase2,
        @TimerId("phase3") Timer phase3) {
      Integer count = counts.get(element.getValue()).read();
      counts.put(element.getValue(), (count == null ? 0 : count) + 1);
      setPhases(window, phase1, phase2, phase3);
    }

    @OnTimer("phase1")
    public void onPhase1(
        @Key String key,
        @StateId("counts") MapState<String, Integer> counts,
        OutputReceiver<String> out) {
      out.output(format(key, counts));
      counts.remove("apple");
    }

    @OnTimer("phase2")
    public void onPhase2(
        @Key String key,
        @StateId("counts") MapState<String, Integer> counts,
        OutputReceiver<String> out) {
      out.output(format(key, counts));
      counts.clear();
    }

    @OnTimer("phase3")
    public void onPhase3(
        @Key String key,
        @StateId("counts") MapState<String, Integer> counts,
        OutputReceiver<String> out) {
      out.output(format(key, counts));
    }

    private static String format(String key, MapState<String, Integer> counts) {
      List<String> words = new ArrayList<>();
      counts.keys().read().forEach(words::add);
      words.sort(null);
      StringBuilder sb = new StringBuilder(key).append(':');
      for (int i = 0; i < words.size(); i++) {
        String word = words.get(i);
        sb.append(i == 0 ? "" : ",").append(word).append('=').append(counts.get(word).read());
      }
      return sb.toString();
    }
  }

  /**
   * Keeps each key's distinct words per window in set state. Phase 1 emits
   * "key:word,...;apple=<contains apple>" and removes apple, phase 2 emits and clears the set,
   * phase 3 emits.
   */
  static class SetStateFn extends DoFn<KV<String, String>, String> {
    @StateId("words")
    private final StateSpec<SetState<String>> wordsSpec = StateSpecs.set(StringUtf8Coder.of());

    @TimerId("phase1")
    private final TimerSpec phase1Spec = TimerSpecs.timer(TimeDomain.EVENT_TIME);

    @TimerId("phase2")
    private final TimerSpec phase2Spec = TimerSpecs.timer(TimeDomain.EVENT_TIME);

    @TimerId("phase3")
    private final TimerSpec phase3Spec = TimerSpecs.timer(TimeDomain.EVENT_TIME);

    @ProcessElement
    public void process(
        @Element KV<String, String> element,
        BoundedWindow window,
        @StateId("words") SetState<String> words,
        @TimerId("phase1") Timer phase1,
        @TimerId("phase2") Timer phase2,
        @TimerId("phase3") Timer phase3) {
      words.add(element.getValue());
      setPhases(window, phase1, phase2, phase3);
    }

    @OnTimer("phase1")
    public void onPhase1(
        @Key String key, @StateId("words") SetState<String> words, OutputReceiver<String> out) {
      out.output(format(key, words));
      words.remove("apple");
    }

    @OnTimer("phase2")
    public void onPhase2(
        @Key String key, @StateId("words") SetState<String> words, OutputReceiver<String> out) {
      out.output(format(key, words));
      words.clear();
    }

    @OnTimer("phase3")
    public void onPhase3(
        @Key String key, @StateId("words") SetState<String> words, OutputReceiver<String> out) {
      out.output(format(key, words));
    }

    private static String format(String key, SetState<String> words) {
      List<String> sorted = new ArrayList<>();
      words.read().forEach(sorted::add);
      sorted.sort(null);
      return key + ":" + String.join(",", sorted) + ";apple=" + words.contains("apple").read();
    }
  }
}
