import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.Exit;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;

/**
 * One JVM for the differential tools suite (tools_diff_test.go): it runs
 * Apache Kafka brokers in process and any number of Kafka's command-line
 * tools, each by calling its main() on a thread of its own, so a tool run
 * costs milliseconds instead of a JVM start.
 *
 * Requests come on stdin, one a line, fields separated by tabs:
 *   ID  CLASS  ARG...       run CLASS.main(ARG...)
 *   ID  @stdin=BASE64  CLASS  ARG...   the same, reading BASE64 as System.in
 *   ID  @kafka CLUSTER-ID PROPS...  format each server.properties and start
 *                            a KafkaRaftServer on each, together
 *   ID  @intercept-exit     intercept System.exit too (status 0) if it can
 * Answers go to stdout, one a line: ID, the exit status, and the tool's
 * stdout and stderr in base64, tab-separated. Exit.exit throws instead of
 * ending the JVM; System.out and System.err are routed per thread (threads
 * a tool starts inherit its buffers), so tools run side by side.
 */
public class ToolRunner {
    static final class ToolExit extends RuntimeException {
        private static final long serialVersionUID = 1L;

        final int code;

        ToolExit(int code) {
            super("exit " + code, null, false, false);
            this.code = code;
        }
    }

    /**
     * One tool run: its output, and the status of its first Exit.exit.
     * A tool that catches Throwable around its own Exit.exit(0) would
     * otherwise report our exception and exit 1; what it prints after
     * its first exit is dropped, as a real exit would have.
     */
    static final class Run {
        final ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        volatile Integer exit;
        java.io.InputStream in = java.io.InputStream.nullInputStream();
        /** Exit.addShutdownHook's hooks, run when the tool ends, as at a process's exit. */
        final List<Runnable> hooks = new ArrayList<>();
    }

    static final InheritableThreadLocal<Run> RUN = new InheritableThreadLocal<>();
    static final OutputStream DISCARD = OutputStream.nullOutputStream();

    /** Writes to the calling thread's buffer, or to fallback outside a tool. */
    static final class Routed extends OutputStream {
        final boolean isErr;
        final OutputStream fallback;

        Routed(boolean isErr, OutputStream fallback) {
            this.isErr = isErr;
            this.fallback = fallback;
        }

        OutputStream target() {
            Run r = RUN.get();
            if (r == null) {
                return fallback;
            }
            if (r.exit != null) {
                return DISCARD;
            }
            return isErr ? r.err : r.out;
        }

        @Override
        public void write(int b) throws java.io.IOException {
            OutputStream t = target();
            synchronized (t) {
                t.write(b);
            }
        }

        @Override
        public void write(byte[] b, int off, int len) throws java.io.IOException {
            OutputStream t = target();
            synchronized (t) {
                t.write(b, off, len);
            }
        }

        @Override
        public void flush() throws java.io.IOException {
            target().flush();
        }
    }

    static PrintStream answers;

    /** System.in of the calling thread's tool run (empty outside one). */
    static final class RoutedIn extends java.io.InputStream {
        java.io.InputStream target() {
            Run r = RUN.get();
            return r == null ? java.io.InputStream.nullInputStream() : r.in;
        }

        @Override
        public int read() throws java.io.IOException {
            return target().read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws java.io.IOException {
            return target().read(b, off, len);
        }

        @Override
        public int available() throws java.io.IOException {
            return target().available();
        }
    }

    public static void main(String[] argv) throws Exception {
        answers = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        PrintStream realErr = System.err;
        System.setOut(new PrintStream(new Routed(false, realErr), true, "UTF-8"));
        System.setErr(new PrintStream(new Routed(true, realErr), true, "UTF-8"));
        Exit.setExitProcedure((code, msg) -> {
            Run r = RUN.get();
            if (r != null && r.exit == null) {
                System.out.flush();
                System.err.flush();
                r.exit = code;
            }
            throw new ToolExit(code);
        });
        // ConsoleProducer, for one, closes its producer (sending what is
        // still buffered) only in such a hook.
        Exit.setShutdownHookAdder((name, hook) -> {
            Run r = RUN.get();
            if (r != null) {
                synchronized (r.hooks) {
                    r.hooks.add(hook);
                }
            }
        });
        Exit.setHaltProcedure((code, msg) -> {
            new Throwable("Exit.halt(" + code + ", " + msg + ")").printStackTrace(realErr);
            halting = true;
            Runtime.getRuntime().halt(code);
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.setIn(new RoutedIn());
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            if (f.length < 2) {
                continue;
            }
            if (f[1].equals("@intercept-exit")) {
                // Only in a JVM without brokers: their threads would be
                // checked too.
                boolean ok = interceptSystemExit();
                synchronized (answers) {
                    answers.println(f[0] + "\t" + (ok ? 0 : 1) + "\t\t");
                }
                continue;
            }
            byte[] stdin = new byte[0];
            String[] req = f;
            if (f[1].startsWith("@stdin=")) {
                stdin = Base64.getDecoder().decode(f[1].substring("@stdin=".length()));
                req = new String[f.length - 1];
                req[0] = f[0];
                System.arraycopy(f, 2, req, 1, f.length - 2);
            }
            String[] r = req;
            byte[] input = stdin;
            Thread th = new Thread(() -> run(r[0], r[1], Arrays.copyOfRange(r, 2, r.length), input), "tool-" + f[0]);
            th.setDaemon(true);
            th.start();
        }
        // The test ended: nothing is left to keep.
        halting = true;
        Runtime.getRuntime().halt(0);
    }

    /** Set while ToolRunner itself halts the JVM. */
    static volatile boolean halting;

    /**
     * Makes System.exit from a tool thread (VerifiableProducer and
     * VerifiableConsumer end so) end only that tool, through Java's
     * security manager, deprecated but still there up to Java 23. Returns
     * false where the JVM has none; the test then runs such tools in JVMs of
     * their own.
     */
    @SuppressWarnings("removal")
    static boolean interceptSystemExit() {
        try {
            System.setSecurityManager(new SecurityManager() {
                @Override
                public void checkExit(int status) {
                    Run r = RUN.get();
                    if (halting || r == null) {
                        return;
                    }
                    if (r.exit == null) {
                        System.out.flush();
                        System.err.flush();
                        r.exit = status;
                    }
                    throw new ToolExit(status);
                }

                @Override
                public void checkPermission(java.security.Permission perm) {
                }

                @Override
                public void checkPermission(java.security.Permission perm, Object context) {
                }
            });
            return true;
        } catch (UnsupportedOperationException | SecurityException e) {
            return false;
        }
    }

    static void run(String id, String cls, String[] args, byte[] stdin) {
        Run run = new Run();
        run.in = new java.io.ByteArrayInputStream(stdin);
        RUN.set(run);
        ByteArrayOutputStream out = run.out, err = run.err;
        int code = 0;
        try {
            if (cls.equals("@kafka")) {
                startKafka(args[0], Arrays.copyOfRange(args, 1, args.length));
            } else {
                Class.forName(cls).getMethod("main", String[].class).invoke(null, (Object) args);
            }
        } catch (Throwable t) {
            Throwable c = t;
            while ((c instanceof InvocationTargetException || c instanceof java.util.concurrent.ExecutionException) && c.getCause() != null) {
                c = c.getCause();
            }
            if (c instanceof ToolExit) {
                code = ((ToolExit) c).code;
            } else if (run.exit == null) {
                code = 99;
                c.printStackTrace(System.err);
            }
        }
        List<Runnable> hooks;
        synchronized (run.hooks) {
            hooks = new ArrayList<>(run.hooks);
        }
        for (Runnable h : hooks) {
            try {
                h.run();
            } catch (Throwable t) {
                t.printStackTrace(System.err);
            }
        }
        if (run.exit != null) {
            code = run.exit;
        }
        System.out.flush();
        System.err.flush();
        byte[] o, e;
        synchronized (out) {
            o = out.toByteArray();
        }
        synchronized (err) {
            e = err.toByteArray();
        }
        synchronized (answers) {
            answers.println(id + "\t" + code + "\t" + Base64.getEncoder().encodeToString(o) + "\t" + Base64.getEncoder().encodeToString(e));
        }
    }

    /** Formats and starts one KafkaRaftServer per properties file, together (a quorum forms only once its voters run). */
    static void startKafka(String clusterId, String[] propsFiles) throws Exception {
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failed = new ArrayList<>();
        for (String file : propsFiles) {
            Thread th = new Thread(() -> {
                // The brokers' threads log to the JVM's stderr, not into
                // this request's answer.
                RUN.remove();
                try {
                    try {
                        kafka.tools.StorageTool.main(new String[] {"format", "-t", clusterId, "-c", file});
                    } catch (ToolExit e) {
                        if (e.code != 0) {
                            throw new RuntimeException("StorageTool format " + file + ": exit " + e.code);
                        }
                    }
                    Properties p = new Properties();
                    try (FileInputStream in = new FileInputStream(file)) {
                        p.load(in);
                    }
                    KafkaRaftServer s = new KafkaRaftServer(KafkaConfig.fromProps(p, false), Time.SYSTEM);
                    s.startup();
                } catch (Throwable t) {
                    synchronized (failed) {
                        failed.add(t);
                    }
                }
            }, "start-" + file);
            threads.add(th);
            th.start();
        }
        for (Thread th : threads) {
            th.join();
        }
        if (!failed.isEmpty()) {
            throw new RuntimeException("starting Kafka: " + failed.get(0), failed.get(0));
        }
        System.out.println("started " + propsFiles.length);
    }
}
