import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Several kafka-transactions.sh runs in one JVM, for tests that would
 * otherwise pay a JVM start per run: TransactionsCommand.main with
 * Exit.exit turned into an exception.
 *
 * Usage: TxnTools bootstrap ARGS... [-- ARGS...]...
 * Prints, for each run: "TOOL <its first argument>", what the tool printed,
 * then "EXIT <status>".
 */
public class TxnTools {
    public static void main(String[] args) throws Exception {
        org.apache.kafka.common.utils.internals.Exit.setExitProcedure((code, msg) -> { throw new ToolExit(code); });
        List<List<String>> runs = new ArrayList<>();
        runs.add(new ArrayList<>());
        for (String a : Arrays.asList(args).subList(1, args.length)) {
            if (a.equals("--")) {
                runs.add(new ArrayList<>());
            } else {
                runs.get(runs.size() - 1).add(a);
            }
        }
        for (List<String> run : runs) {
            List<String> argv = new ArrayList<>(List.of("--bootstrap-server", args[0]));
            argv.addAll(run);
            System.out.println("TOOL " + run.get(0));
            int code = 0;
            try {
                org.apache.kafka.tools.TransactionsCommand.main(argv.toArray(new String[0]));
            } catch (ToolExit e) {
                code = e.code;
            }
            System.out.flush();
            System.out.println("EXIT " + code);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    static final class ToolExit extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int code;

        ToolExit(int code) {
            super("exit " + code);
            this.code = code;
        }
    }
}
