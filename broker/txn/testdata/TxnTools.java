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
            TxnClients.tool(run.get(0), org.apache.kafka.tools.TransactionsCommand::main, argv.toArray(new String[0]));
        }
        TxnClients.halt();
    }
}
