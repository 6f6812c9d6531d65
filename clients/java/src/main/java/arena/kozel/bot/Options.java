package arena.kozel.bot;

/**
 * The command line of the bot.
 *
 * <pre>
 *   --server host:port            the referee (default 127.0.0.1:50051)
 *   --table ID                    sit at a table made with CreateTable, or
 *   --queue PRESET --players N    queue for a match of a preset (default 2 players), or
 *   --ladder NAME                 play rated matches on a ladder (needs --token)
 *   --token TOKEN                 the bot's ladder credential
 *   --name NAME                   the bot's display name (default java-bot)
 *   --matches N                   leave after N matches have started, exit after they end (1)
 *   --drop-after N                test hook: cancel the stream once after N answers
 * </pre>
 */
record Options(String server, String table, String queue, String ladder, String token,
               int players, String name, int matches, int dropAfter) {

    static final String USAGE = """
            usage: java -jar kozel-java-bot.jar --server HOST:PORT (--table ID | --queue PRESET \
            [--players N] | --ladder NAME) [--token TOKEN] [--name NAME] [--matches N] \
            [--drop-after N]""";

    static Options parse(String[] args) {
        String server = "127.0.0.1:50051", table = null, queue = null, name = "java-bot";
        String ladder = null, token = "";
        int players = 2, matches = 1, dropAfter = 0;
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (flag.equals("-h") || flag.equals("--help")) {
                throw new IllegalArgumentException(USAGE);
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(flag + " needs a value\n" + USAGE);
            }
            String value = args[++i];
            switch (flag) {
                case "--server" -> server = value;
                case "--table" -> table = value;
                case "--queue" -> queue = value;
                case "--ladder" -> ladder = value;
                case "--token" -> token = value;
                case "--players" -> players = positive(flag, value);
                case "--name" -> name = value;
                case "--matches" -> matches = positive(flag, value);
                case "--drop-after" -> dropAfter = positive(flag, value);
                default -> throw new IllegalArgumentException(
                        "unknown flag " + flag + "\n" + USAGE);
            }
        }
        if ((table != null ? 1 : 0) + (queue != null ? 1 : 0) + (ladder != null ? 1 : 0) != 1) {
            throw new IllegalArgumentException(
                    "give exactly one of --table, --queue and --ladder\n" + USAGE);
        }
        return new Options(server, table, queue, ladder, token, players, name, matches, dropAfter);
    }

    private static int positive(String flag, String value) {
        try {
            int n = Integer.parseInt(value);
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new IllegalArgumentException(flag + " wants a positive number, not " + value);
    }
}
