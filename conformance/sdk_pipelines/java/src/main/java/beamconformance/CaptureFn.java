package beamconformance;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.windowing.BoundedWindow;
import org.apache.beam.sdk.transforms.windowing.IntervalWindow;
import org.apache.beam.sdk.transforms.windowing.PaneInfo;

/**
 * Appends one JSON line per element to a file:
 *
 * <pre>{"value": "...", "timestamp_ms": 0, "window": null | [start_ms, end_ms],
 *  "pane": {"first": true, "last": true, "timing": "ON_TIME", "index": 0, "nonspec": 0}}</pre>
 *
 * <p>With LOOPBACK the SDK harness runs inside the submitting JVM and may process several bundles
 * at once, so all instances share one static lock, and each line is written and closed (flushed)
 * before the lock is released.
 */
class CaptureFn extends DoFn<String, Void> {
  private static final Object LOCK = new Object();

  private final String path;

  CaptureFn(String path) {
    this.path = path;
  }

  @ProcessElement
  public void process(ProcessContext c, BoundedWindow window) throws IOException {
    String line = toJson(c.element(), c.timestamp().getMillis(), window, c.pane()) + "\n";
    synchronized (LOCK) {
      try (Writer w =
          Files.newBufferedWriter(
              Paths.get(path),
              StandardCharsets.UTF_8,
              StandardOpenOption.CREATE,
              StandardOpenOption.APPEND)) {
        w.write(line);
      }
    }
  }

  static String toJson(String value, long timestampMs, BoundedWindow window, PaneInfo pane) {
    StringBuilder sb = new StringBuilder();
    sb.append("{\"value\": ").append(quote(value));
    sb.append(", \"timestamp_ms\": ").append(timestampMs);
    sb.append(", \"window\": ");
    if (window instanceof IntervalWindow) {
      IntervalWindow iw = (IntervalWindow) window;
      sb.append('[')
          .append(iw.start().getMillis())
          .append(", ")
          .append(iw.end().getMillis())
          .append(']');
    } else {
      sb.append("null"); // GlobalWindow (no other window types are used by the cases)
    }
    sb.append(", \"pane\": {\"first\": ").append(pane.isFirst());
    sb.append(", \"last\": ").append(pane.isLast());
    sb.append(", \"timing\": \"").append(pane.getTiming().name()).append('"');
    sb.append(", \"index\": ").append(pane.getIndex());
    sb.append(", \"nonspec\": ").append(pane.getNonSpeculativeIndex());
    sb.append("}}");
    return sb.toString();
  }

  /** JSON string literal: escapes quotes, backslashes and control characters. */
  static String quote(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      switch (ch) {
        case '"':
          sb.append("\\\"");
          break;
        case '\\':
          sb.append("\\\\");
          break;
        case '\n':
          sb.append("\\n");
          break;
        case '\r':
          sb.append("\\r");
          break;
        case '\t':
          sb.append("\\t");
          break;
        default:
          if (ch < 0x20) {
            sb.append(String.format("\\u%04x", (int) ch));
          } else {
            sb.append(ch);
          }
      }
    }
    return sb.append('"').toString();
  }
}
