package arena.kozel.bot;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import kozel.v1.Game.MatchResult;
import kozel.v1.Game.Ruleset;
import kozel.v1.Referee.ActionReply;
import kozel.v1.Referee.DecisionRequest;
import kozel.v1.Referee.Hello;
import kozel.v1.Referee.JoinLadder;
import kozel.v1.Referee.JoinQueue;
import kozel.v1.Referee.JoinTable;
import kozel.v1.Referee.Leave;
import kozel.v1.Referee.MatchEnd;
import kozel.v1.Referee.MatchStart;
import kozel.v1.Referee.PlayRequest;
import kozel.v1.Referee.PlayResponse;
import kozel.v1.Referee.Redirect;
import kozel.v1.Referee.Rejection;
import kozel.v1.Referee.SeatNotice;
import kozel.v1.Referee.Welcome;
import kozel.v1.RefereeServiceGrpc;

/**
 * The Kozel Arena example bot: one bidirectional {@code Play} stream to the referee.
 *
 * <p>The protocol in short (proto/kozel/v1/referee.proto has it all): send {@code Hello}, keep
 * the {@code resume_token} of the {@code Welcome}, answer every {@code DecisionRequest} with an
 * {@code ActionReply} naming its match id, request id and an index into its legal actions.
 * When the stream breaks, open a new one with {@code Hello{resume_token}}: the referee resends
 * {@code MatchStart}, {@code DealStart} and the pending request (resent = true), which is
 * simply answered again.
 *
 * <p>On a ladder shared by several referees a {@code Redirect} may come to a stream that plays
 * no match; the referee then ends the stream. The bot sends the same {@code Hello} to its
 * address with {@code redirect_ticket} set, and keeps its first address: when the redirected
 * referee cannot be reached for {@code REDIRECT_WINDOW_MS}, refuses the ticket, or is lost for
 * good, it goes back there with its first {@code Hello} (no ticket, no resume token).
 *
 * <p>Threading: grpc-java delivers the referee's messages on its own threads. The observer
 * below only puts them into a queue; the main thread takes them one by one and is the only
 * thread that writes to the stream (a request {@code StreamObserver} is not thread-safe).
 */
public final class KozelBot {
    private static final int PROTOCOL_VERSION = 1;
    private static final String CLIENT = "kozel-java-example/0.1";
    private static final long RESUME_WINDOW_MS = 10_000; // give up resuming after this long
    private static final long REDIRECT_WINDOW_MS = 3_000; // then back to the first address
    private static final long BACKOFF_START_MS = 100;
    private static final long BACKOFF_MAX_MS = 2_000;
    private static final long ADRIFT_BACKOFF_MAX_MS = 5_000; // while no referee answers
    private static final long CLOSE_WAIT_MS = 5_000; // for the referee to close after Leave

    private final Options opts;
    private ManagedChannel channel;
    private RefereeServiceGrpc.RefereeServiceStub stub;
    private String address; // the current referee; opts.server() is the first one

    // The session, kept across streams.
    private String resumeToken = "";
    private String ticket = ""; // from a Redirect, sent in the next Hello until a Welcome
    private Redirect redirect; // received on the current stream
    private final Set<String> started = new HashSet<>(); // match ids seen in MatchStart
    private final Set<String> ended = new HashSet<>(); // match ids seen in MatchEnd
    private final Map<String, DecisionRequest> pending = new HashMap<>(); // last request per match
    private final Map<String, Integer> lastAnswer = new HashMap<>(); // index sent for it
    private boolean leaveSent;
    private int answered;
    private boolean droppedOnce;
    private boolean everWelcomed; // a referee welcomed this bot once
    private boolean adrift; // its referee was lost: retried without end, with new sessions

    // The current stream.
    private ClientCallStreamObserver<PlayRequest> requests;
    private boolean cancelledByUs;
    private boolean welcomed;

    KozelBot(Options opts) {
        this.opts = opts;
        connect(opts.server());
    }

    /** Points the bot at a referee (plain text, as for --server). */
    private void connect(String to) {
        close();
        address = to;
        channel = Grpc.newChannelBuilder(to, InsecureChannelCredentials.create()).build();
        stub = RefereeServiceGrpc.newStub(channel);
    }

    void close() {
        if (channel != null) {
            channel.shutdownNow();
        }
    }

    private boolean redirected() {
        return !address.equals(opts.server()) || !ticket.isEmpty();
    }

    /** Back to the first address when a redirected referee is lost. */
    private void fallBack(String why) {
        restart("redirected referee " + address + " lost (" + why + ")");
    }

    /**
     * A new session at the first address with the first Hello (no ticket, no resume token): the
     * old session is gone, and the matches it ran are over for this bot (its referee finished or
     * aborted them).
     */
    private void restart(String why) {
        log("%s; starting a new session at %s", why, opts.server());
        ended.addAll(started);
        pending.clear();
        ticket = "";
        resumeToken = "";
        leaveSent = false;
        connect(opts.server());
    }

    /** A queue or ladder bot welcomed once waits for a lost referee without end. */
    private boolean keepsTrying() {
        return adrift || (everWelcomed && opts.table() == null);
    }

    public static void main(String[] args) throws InterruptedException {
        Options opts;
        try {
            opts = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        KozelBot bot = new KozelBot(opts);
        int code;
        try {
            code = bot.run();
        } finally {
            bot.close();
        }
        System.exit(code);
    }

    /** Plays until the wanted matches have ended, resuming dropped streams; the exit code. */
    int run() throws InterruptedException {
        long downSince = -1;
        long backoff = BACKOFF_START_MS;
        while (true) {
            boolean resuming = !resumeToken.isEmpty();
            Status status = playOneStream();
            if (done()) {
                return 0;
            }
            if (redirect != null) { // the referee ended the stream after it
                Redirect r = redirect;
                redirect = null;
                resumeToken = "";
                if (r.getAddress().isEmpty() || r.getTicket().isEmpty()) {
                    fallBack("a Redirect without an address or ticket");
                } else {
                    log("redirected to %s", r.getAddress());
                    connect(r.getAddress());
                    ticket = r.getTicket();
                }
                downSince = -1;
                continue;
            }
            boolean resumable = switch (status.getCode()) {
                // OK: the referee closed the stream before our matches ended; UNAVAILABLE: the
                // network or the referee went away; RESOURCE_EXHAUSTED: we read too slowly.
                case OK, UNAVAILABLE, RESOURCE_EXHAUSTED -> true;
                case CANCELLED -> cancelledByUs;
                // NOT_FOUND (unknown table or expired token), INVALID_ARGUMENT, ... are final.
                default -> false;
            };
            long now = System.currentTimeMillis();
            if (welcomed || downSince < 0) { // a welcomed stream restarts the resume window
                downSince = now;
                backoff = BACKOFF_START_MS;
            }
            boolean idle = ended.containsAll(started);
            if (redirected() && (!resumable || (status.isOk() && idle)
                    || now - downSince > REDIRECT_WINDOW_MS)) {
                fallBack(status.getCode() + " " + status.getDescription());
                if (done()) {
                    return 0;
                }
                downSince = -1;
                continue;
            }
            // A refused resume (NOT_FOUND): the referee restarted, or a shared address reached
            // another referee. The session is gone: start a new one.
            if (resuming && status.getCode() == Status.Code.NOT_FOUND) {
                restart("the referee refused to resume the session (" + status.getDescription()
                        + ")");
                downSince = -1;
                backoff = BACKOFF_START_MS;
                continue;
            }
            if (!resumable) {
                log("stream failed: %s %s", status.getCode(), status.getDescription());
                return 1;
            }
            if (now - downSince > RESUME_WINDOW_MS) {
                if (!keepsTrying()) {
                    log("could not connect or resume within %d ms (last status %s)",
                            RESUME_WINDOW_MS, status.getCode());
                    return 1;
                }
                if (!resumeToken.isEmpty() || !ended.containsAll(started)) {
                    restart("no referee answered at " + address + " for " + RESUME_WINDOW_MS
                            + " ms");
                }
                adrift = true; // from now on, retried until a referee answers
            }
            long limit = adrift ? ADRIFT_BACKOFF_MAX_MS : BACKOFF_MAX_MS;
            backoff = Math.min(backoff, limit);
            long wait = (long) (backoff * ThreadLocalRandom.current().nextDouble(0.75, 1.25));
            log("stream ended (%s); reconnecting in %d ms", status.getCode(), wait);
            Thread.sleep(wait);
            backoff = Math.min(backoff * 2, limit);
        }
    }

    private boolean done() {
        return ended.size() >= opts.matches();
    }

    /** Runs one Play stream until it ends; returns its final status. */
    private Status playOneStream() throws InterruptedException {
        // Items are PlayResponse messages, then one Status when the stream ends.
        BlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
        StreamObserver<PlayResponse> responses = new StreamObserver<>() {
            @Override
            public void onNext(PlayResponse msg) {
                inbox.add(msg);
            }

            @Override
            public void onError(Throwable t) {
                inbox.add(Status.fromThrowable(t));
            }

            @Override
            public void onCompleted() {
                inbox.add(Status.OK);
            }
        };
        // The request side of an async bidi call is a ClientCallStreamObserver, which can cancel.
        requests = (ClientCallStreamObserver<PlayRequest>) stub.play(responses);
        cancelledByUs = false;
        welcomed = false;
        send(PlayRequest.newBuilder().setHello(hello()).build());
        if (leaveSent) { // Leave belongs to the session, but saying it again is harmless
            send(PlayRequest.newBuilder().setLeave(Leave.getDefaultInstance()).build());
        }
        while (true) {
            // After our last MatchEnd the referee closes the stream (we sent Leave); do not
            // wait for that forever.
            Object item = done() ? inbox.poll(CLOSE_WAIT_MS, TimeUnit.MILLISECONDS) : inbox.take();
            if (item == null) {
                cancel("the referee did not close the stream after Leave");
                continue;
            }
            if (item instanceof Status status) {
                return status;
            }
            handle((PlayResponse) item);
        }
    }

    private Hello hello() {
        Hello.Builder hello = Hello.newBuilder()
                .setProtocolVersion(PROTOCOL_VERSION)
                .setBotName(opts.name())
                .setToken(opts.token()) // the ladder credential, also after a redirect
                .setMaxMatches(1) // one match at a time on this stream
                .setClient(CLIENT)
                // It plays from each DecisionRequest's observation alone: no Event messages.
                .setSkipEvents(true);
        if (!resumeToken.isEmpty()) {
            return hello.setResumeToken(resumeToken).build(); // join_* is ignored on resume
        }
        hello.setRedirectTicket(ticket); // a redirected stream takes the seat its ticket names
        if (opts.table() != null) {
            hello.setJoinTable(JoinTable.newBuilder().setTableId(opts.table()));
        } else if (opts.ladder() != null) {
            hello.setJoinLadder(JoinLadder.newBuilder().setLadder(opts.ladder()));
        } else {
            hello.setJoinQueue(JoinQueue.newBuilder()
                    .setRuleset(Ruleset.newBuilder().setPreset(opts.queue()))
                    .setPlayers(opts.players()));
        }
        return hello.build();
    }

    private void handle(PlayResponse msg) {
        switch (msg.getMessageCase()) {
            case WELCOME -> onWelcome(msg.getWelcome());
            case MATCH_START -> onMatchStart(msg.getMatchStart());
            case DECISION -> onDecision(msg.getDecision());
            case REJECTION -> onRejection(msg.getRejection());
            case EVENT -> {
                if (msg.getEvent().hasNotice()) {
                    SeatNotice n = msg.getEvent().getNotice();
                    log("seat %d: %s", n.getSeat(), n.getKind());
                }
            }
            case MATCH_END -> onMatchEnd(msg.getMatchEnd());
            case REDIRECT -> redirect = msg.getRedirect(); // run() follows it
            default -> { } // DealStart, DealEnd: this strategy needs nothing from them
        }
    }

    private void onWelcome(Welcome w) {
        welcomed = true;
        everWelcomed = true;
        adrift = false;
        resumeToken = w.getResumeToken(); // present it in Hello.resume_token after a drop
        ticket = ""; // used: a drop here resumes with the resume token
        log("welcome: session %s%s, running %s", w.getSessionId(),
                w.getResumed() ? " (resumed)" : "", w.getRunningMatchIdsList());
    }

    private void onMatchStart(MatchStart m) {
        // After a resume the referee sends MatchStart again: count each match once.
        if (ended.contains(m.getMatchId()) || !started.add(m.getMatchId())) {
            return;
        }
        log("match %s: seat %d of %d, %s", m.getMatchId(), m.getSeat(), m.getPlayers(),
                m.getRuleset().getPreset());
        if (started.size() >= opts.matches() && !leaveSent) {
            // Finish the running matches, start no more; the referee closes the stream after.
            leaveSent = true;
            send(PlayRequest.newBuilder().setLeave(Leave.getDefaultInstance()).build());
        }
    }

    private void onDecision(DecisionRequest req) {
        // A resent request (after a resume) may be one we already answered on the old
        // stream: the answer was lost with it, so answer again.
        pending.put(req.getMatchId(), req);
        int index = Strategy.choose(req);
        if (index < 0) {
            log("match %s: request %d has no legal actions", req.getMatchId(), req.getRequestId());
            return;
        }
        reply(req, index);
        answered++;
        if (opts.dropAfter() > 0 && !droppedOnce && answered >= opts.dropAfter()) {
            droppedOnce = true; // test hook: drop the stream once, to exercise resuming
            cancel("--drop-after " + opts.dropAfter());
        }
    }

    private void onRejection(Rejection r) {
        log("match %s: answer to request %d refused: %s %s", r.getMatchId(), r.getRequestId(),
                r.getCode(), r.getMessage());
        DecisionRequest req = pending.get(r.getMatchId());
        // UNKNOWN_REQUEST (a stale answer) has retry_allowed false: nothing to redo.
        if (!r.getRetryAllowed() || req == null || req.getRequestId() != r.getRequestId()) {
            return;
        }
        int n = req.getLegalActionsCount();
        if (n > 0) { // try the next index
            reply(req, (lastAnswer.getOrDefault(r.getMatchId(), -1) + 1) % n);
        }
    }

    private void onMatchEnd(MatchEnd e) {
        if (!ended.add(e.getMatchId())) {
            return;
        }
        started.add(e.getMatchId());
        pending.remove(e.getMatchId());
        lastAnswer.remove(e.getMatchId());
        MatchResult r = e.getResult();
        // One line on stdout per match, for scripts and tests.
        System.out.printf("match %s ended: reason=%s draw=%s winner_side=%d forfeits=%d "
                        + "deals=%d replay=%s%n", e.getMatchId(), r.getReason(), r.getDraw(),
                r.getWinnerSide(), r.getForfeitsCount(), r.getDeals(), e.getReplayId());
        System.out.flush();
    }

    private void reply(DecisionRequest req, int index) {
        lastAnswer.put(req.getMatchId(), index);
        send(PlayRequest.newBuilder().setAction(ActionReply.newBuilder()
                .setMatchId(req.getMatchId())
                .setRequestId(req.getRequestId())
                .setLegalIndex(index)).build());
    }

    private void send(PlayRequest msg) {
        if (!cancelledByUs) { // a cancelled call must not be written to
            requests.onNext(msg);
        }
    }

    private void cancel(String why) {
        if (!cancelledByUs) {
            log("cancelling the stream: %s", why);
            cancelledByUs = true;
            requests.cancel(why, null);
        }
    }

    private static void log(String format, Object... args) {
        System.err.printf("[java-bot] " + format + "%n", args);
    }
}
