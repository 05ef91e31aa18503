package beamconformance.vr;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.Ignore;
import org.junit.Test;
import org.junit.experimental.categories.Category;
import org.junit.runner.Description;
import org.junit.runner.JUnitCore;
import org.junit.runner.Request;
import org.junit.runner.manipulation.Filter;
import org.junit.runner.notification.Failure;
import org.junit.runner.notification.RunListener;
import org.junit.runners.model.TestClass;

/**
 * Lists and runs Beam's Java ValidatesRunner tests for the conformance kit, speaking JSON lines.
 *
 * <pre>
 * Launcher list TESTS_JAR   one line per ValidatesRunner test method in the jar:
 *                           {"class", "method", "categories": [...], "ignored"}; a class the JVM
 *                           cannot load or inspect: {"class", "load_error"}
 * Launcher run              reads test ids (CLASS.METHOD, nested classes with '$') from stdin, one
 *                           a line, runs each with JUnit 4, and answers one line per id:
 *                           {"id", "outcome": passed|failed|skipped|error, "message", "trace",
 *                           "duration_s"}; first it prints {"ready": true}
 * </pre>
 *
 * <p>Categories are those of the method and of its class (and the class's superclasses, as
 * {@code @Category} is inherited), each with all its super-interfaces: JUnit's Categories filter,
 * and so Beam's Gradle tasks, match a category by assignability.
 *
 * <p>Only the launcher writes to the real standard output; whatever a test prints goes to stderr.
 */
public final class Launcher {
  private static final String VALIDATES_RUNNER = "org.apache.beam.sdk.testing.ValidatesRunner";
  private static final int TRACE_LINES = 40;
  private static final ObjectMapper JSON = new ObjectMapper();

  private Launcher() {}

  public static void main(String[] args) throws Exception {
    // the protocol's channel; tests and Beam's logging print to stderr instead
    PrintStream out =
        new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    if (args.length == 2 && args[0].equals("list")) {
      list(args[1], out);
    } else if (args.length == 1 && args[0].equals("run")) {
      serve(out);
    } else {
      System.err.println("usage: Launcher list TESTS_JAR | Launcher run");
      System.exit(2);
    }
  }

  // ------------------------------------------------------------------ list

  private static void list(String jarPath, PrintStream out) throws Exception {
    ClassLoader loader = Launcher.class.getClassLoader();
    List<String> names = new ArrayList<>();
    try (JarFile jar = new JarFile(jarPath)) {
      Enumeration<JarEntry> entries = jar.entries();
      while (entries.hasMoreElements()) {
        String name = entries.nextElement().getName();
        if (name.endsWith(".class") && !name.contains("-")) {
          names.add(name.substring(0, name.length() - ".class".length()).replace('/', '.'));
        }
      }
    }
    names.sort(null);
    for (String name : names) {
      if (isAnonymous(name) || name.startsWith("org.apache.beam.repackaged.")) {
        continue;
      }
      Class<?> cls;
      List<ObjectNode> lines = new ArrayList<>();
      try {
        cls = Class.forName(name, false, loader);
        if (!isTestClass(cls)) {
          continue;
        }
        Set<String> classCategories = categoriesOf(cls.getAnnotation(Category.class));
        for (Method method : new TestClass(cls).getAnnotatedMethods(Test.class).stream()
            .map(m -> m.getMethod())
            .toList()) {
          Set<String> categories = new TreeSet<>(classCategories);
          categories.addAll(categoriesOf(method.getAnnotation(Category.class)));
          if (!categories.contains(VALIDATES_RUNNER)) {
            continue;
          }
          ObjectNode line = JSON.createObjectNode();
          line.put("class", cls.getName());
          line.put("method", method.getName());
          ArrayNode array = line.putArray("categories");
          categories.forEach(array::add);
          line.put(
              "ignored",
              method.isAnnotationPresent(Ignore.class) || cls.isAnnotationPresent(Ignore.class));
          lines.add(line);
        }
      } catch (Throwable e) { // NoClassDefFoundError and friends: a test dependency is missing
        ObjectNode line = JSON.createObjectNode();
        line.put("class", name);
        line.put("load_error", e.toString());
        out.println(JSON.writeValueAsString(line));
        continue;
      }
      // sorted by method name, so a listing is the same from run to run
      lines.sort((a, b) -> a.get("method").asText().compareTo(b.get("method").asText()));
      for (ObjectNode line : lines) {
        out.println(JSON.writeValueAsString(line));
      }
    }
  }

  private static boolean isAnonymous(String className) {
    String simple = className.substring(className.lastIndexOf('.') + 1);
    for (String part : simple.split("\\$")) {
      if (!part.isEmpty() && Character.isDigit(part.charAt(0))) {
        return true;
      }
    }
    return false;
  }

  private static boolean isTestClass(Class<?> cls) {
    int modifiers = cls.getModifiers();
    if (!Modifier.isPublic(modifiers) || Modifier.isAbstract(modifiers) || cls.isInterface()) {
      return false;
    }
    if (cls.getEnclosingClass() != null && !Modifier.isStatic(modifiers)) {
      return false;
    }
    for (Class<?> c = cls; c != null && c != Object.class; c = c.getSuperclass()) {
      for (Method m : c.getDeclaredMethods()) {
        if (m.isAnnotationPresent(Test.class)) {
          return true;
        }
      }
    }
    return false;
  }

  /** The categories an annotation names, each with every interface it extends. */
  private static Set<String> categoriesOf(Category category) {
    Set<String> names = new LinkedHashSet<>();
    if (category != null) {
      for (Class<?> c : category.value()) {
        addWithSupers(c, names);
      }
    }
    return names;
  }

  private static void addWithSupers(Class<?> c, Set<String> names) {
    if (names.add(c.getName())) {
      for (Class<?> parent : c.getInterfaces()) {
        addWithSupers(parent, names);
      }
      if (c.getSuperclass() != null && c.getSuperclass() != Object.class) {
        addWithSupers(c.getSuperclass(), names);
      }
    }
  }

  // ------------------------------------------------------------------ run

  private static void serve(PrintStream out) throws Exception {
    out.println("{\"ready\":true}");
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String id;
    while ((id = in.readLine()) != null) {
      id = id.trim();
      if (id.isEmpty()) {
        continue;
      }
      ObjectNode answer = runOne(id);
      out.println(JSON.writeValueAsString(answer));
    }
  }

  private static ObjectNode runOne(String id) {
    ObjectNode answer = JSON.createObjectNode();
    answer.put("id", id);
    long started = System.nanoTime();
    int dot = id.lastIndexOf('.');
    if (dot < 0) {
      return error(answer, "not a test id (CLASS.METHOD): " + id, null, started);
    }
    String className = id.substring(0, dot);
    String method = id.substring(dot + 1);
    Class<?> cls;
    try {
      cls = Class.forName(className, true, Launcher.class.getClassLoader());
    } catch (Throwable e) {
      return error(answer, "the test class cannot be loaded: " + e, e, started);
    }
    Outcome outcome = new Outcome();
    try {
      JUnitCore core = new JUnitCore();
      core.addListener(outcome);
      // by method name, so a parameterized test's runs ("method[0]", ...) count as one test
      Request request = Request.aClass(cls).filterWith(new MethodFilter(method));
      core.run(request);
    } catch (Throwable e) {
      return error(answer, "JUnit could not run the test: " + e, e, started);
    }
    if (outcome.started == 0 && outcome.failures.isEmpty() && outcome.ignored == 0) {
      return error(answer, "no test " + method + " in " + className, null, started);
    }
    if (!outcome.failures.isEmpty()) {
      Failure first = outcome.failures.get(0);
      boolean setup = first.getDescription().getMethodName() == null
          || first.getDescription().getMethodName().startsWith("initializationError");
      answer.put("outcome", setup ? "error" : "failed");
      answer.put("message", messageOf(first.getException()));
      answer.put("trace", traceOf(first.getException()));
    } else if (outcome.ignored > 0 && outcome.started == 0) {
      answer.put("outcome", "skipped");
      answer.put("message", "@Ignore");
    } else if (outcome.assumption != null) {
      answer.put("outcome", "skipped");
      answer.put("message", "assumption failed: " + messageOf(outcome.assumption.getException()));
    } else {
      answer.put("outcome", "passed");
      answer.put("message", "");
    }
    answer.put("duration_s", seconds(started));
    return answer;
  }

  private static ObjectNode error(ObjectNode answer, String message, Throwable e, long started) {
    answer.put("outcome", "error");
    answer.put("message", message);
    answer.put("trace", e == null ? "" : traceOf(e));
    answer.put("duration_s", seconds(started));
    return answer;
  }

  private static double seconds(long startedNanos) {
    return Math.round((System.nanoTime() - startedNanos) / 1e6) / 1e3;
  }

  private static String messageOf(Throwable e) {
    String text = e.getMessage();
    return e.getClass().getName() + (text == null ? "" : ": " + text);
  }

  private static String traceOf(Throwable e) {
    StringWriter text = new StringWriter();
    e.printStackTrace(new PrintWriter(text));
    String[] lines = text.toString().split("\n");
    StringBuilder kept = new StringBuilder();
    for (int i = 0; i < Math.min(lines.length, TRACE_LINES); i++) {
      kept.append(lines[i]).append('\n');
    }
    if (lines.length > TRACE_LINES) {
      kept.append("\t... ").append(lines.length - TRACE_LINES).append(" more lines\n");
    }
    return kept.toString();
  }

  /** Keeps the test methods of one name (and the suites that hold them). */
  private static final class MethodFilter extends Filter {
    private final String method;

    MethodFilter(String method) {
      this.method = method;
    }

    @Override
    public boolean shouldRun(Description description) {
      if (description.isTest()) {
        String name = description.getMethodName();
        if (name == null) {
          return false;
        }
        int bracket = name.indexOf('[');
        return (bracket < 0 ? name : name.substring(0, bracket)).equals(method);
      }
      for (Description child : description.getChildren()) {
        if (shouldRun(child)) {
          return true;
        }
      }
      return false;
    }

    @Override
    public String describe() {
      return "method " + method;
    }
  }

  /** What JUnit reported for the test (all of a parameterized test's runs). */
  private static final class Outcome extends RunListener {
    int started;
    int ignored;
    final List<Failure> failures = new ArrayList<>();
    Failure assumption;

    @Override
    public void testStarted(Description description) {
      started++;
    }

    @Override
    public void testIgnored(Description description) {
      ignored++;
    }

    @Override
    public void testFailure(Failure failure) {
      failures.add(failure);
    }

    @Override
    public void testAssumptionFailure(Failure failure) {
      if (assumption == null) {
        assumption = failure;
      }
    }
  }
}
