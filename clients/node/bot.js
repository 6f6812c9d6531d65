#!/usr/bin/env node
// An example Kozel Arena bot for Node.js 20: one bidirectional Play stream to the referee,
// stubs loaded at run time from the repo's proto/ folder with @grpc/proto-loader.
//
//   node bot.js --server 127.0.0.1:50051 --table T1 [--name node-bot] [--matches 1]
//   node bot.js --server 127.0.0.1:50051 --queue classic --players 2 [--matches 3]
//   node bot.js --server 127.0.0.1:50051 --ladder main --token SECRET [--matches 10]
//
// The protocol (proto/kozel/v1/referee.proto): send Hello, get Welcome (keep its
// resume_token), then MatchStart, DealStart, DecisionRequests (answer each with an ActionReply
// naming an index into legal_actions), Events, DealEnd and MatchEnd. After a dropped stream
// send Hello again with the resume_token: the referee resends MatchStart, DealStart and the
// pending DecisionRequest. A Redirect (a ladder shared by several referees) comes to a stream
// that plays no match, and the referee then ends the stream: send the same Hello to its address
// with redirect_ticket set. Keep the first address: if the redirected referee cannot be reached
// for REDIRECT_FOR_MS, refuses the ticket, or its stream is lost for good, go back there with
// the first Hello (no ticket, no resume token).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PROTO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../proto');
const PROTOCOL_VERSION = 1;
const CLIENT = 'kozel-node-example/0.1';
const RESUME_FOR_MS = 10_000; // how long to keep trying to resume after a drop
const REDIRECT_FOR_MS = 3_000; // how long to try a redirected address before the first one
const BACKOFF_START_MS = 100;
const BACKOFF_MAX_MS = 1_000;
const CLOSE_WAIT_MS = 5_000; // how long to wait for the referee to close after our last match

// Generated code is not needed: proto-loader parses the .proto files when the bot starts.
// Field names become camelCase (legal_actions -> legalActions); uint64 request ids stay strings
// (a JS number cannot hold every uint64), enums arrive as their names, and `oneofs: true`
// adds a field naming the member that is set (PlayResponse.message === 'decision').
const definition = protoLoader.loadSync('kozel/v1/referee.proto', {
  includeDirs: [PROTO_DIR],
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const { RefereeService } = grpc.loadPackageDefinition(definition).kozel.v1;

// Statuses after which the session can be resumed: the network broke, we cancelled the stream
// ourselves (--drop-after), or the referee cut a stream that read too slowly.
const RESUMABLE = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.CANCELLED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.INTERNAL,
]);

function parseFlags(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      server: { type: 'string', default: '127.0.0.1:50051' },
      table: { type: 'string' },
      queue: { type: 'string' },
      ladder: { type: 'string' },
      token: { type: 'string', default: '' },
      players: { type: 'string' },
      name: { type: 'string', default: 'node-bot' },
      matches: { type: 'string', default: '1' },
      'drop-after': { type: 'string' }, // test hook: cancel the stream once after N answers
    },
  });
  const int = (flag, min) => {
    const n = Number(values[flag]);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} must be an integer >= ${min}`);
    return n;
  };
  if ([values.table, values.queue, values.ladder].filter((v) => v !== undefined).length !== 1) {
    throw new Error('give exactly one of --table ID, --queue PRESET --players N and --ladder NAME');
  }
  return {
    server: values.server,
    table: values.table,
    queue: values.queue,
    ladder: values.ladder,
    token: values.token,
    players: values.queue !== undefined ? int('players', 2) : 0,
    name: values.name,
    matches: int('matches', 1),
    dropAfter: values['drop-after'] !== undefined ? int('drop-after', 1) : null,
  };
}

// The strategy: declare when offered, else the first beat, else the action with fewest cards.
// It only ever returns an index into legal_actions, so the referee never refuses it. It is
// deterministic, so a request resent after a resume gets the same answer as before.
export function choose(request) {
  const actions = request.legalActions;
  let i = actions.findIndex((a) => a.kind === 'ACTION_KIND_DECLARE');
  if (i < 0) i = actions.findIndex((a) => a.kind === 'ACTION_KIND_BEAT');
  if (i < 0) {
    i = 0;
    actions.forEach((a, j) => {
      if (a.cards.length < actions[i].cards.length) i = j;
    });
  }
  return i;
}

class Bot {
  constructor(opts) {
    this.opts = opts;
    this.client = null;
    this.connect(opts.server); // opts.server is the first address, kept through redirects
    this.resumeToken = ''; // from the last Welcome
    this.ticket = ''; // from a Redirect, sent in the next Hello until a Welcome
    this.redirect = null; // a Redirect received on the current stream
    this.started = new Set(); // match ids seen in MatchStart (resent on resume: a Set)
    this.ended = new Set(); // match ids seen in MatchEnd, or lost with a redirected referee
    this.pending = new Map(); // match id -> its latest DecisionRequest
    this.answered = 0; // answers sent, for --drop-after
    this.dropped = false;
    this.call = null;
  }

  get done() {
    return this.ended.size >= this.opts.matches;
  }

  // The current address came from a Redirect.
  get redirected() {
    return this.address !== this.opts.server || this.ticket !== '';
  }

  connect(address) {
    this.client?.close();
    this.address = address;
    this.client = new RefereeService(address, grpc.credentials.createInsecure(), {
      'grpc.keepalive_time_ms': 20_000,
      'grpc.keepalive_timeout_ms': 10_000,
      // While the connection is down grpc-js fails new calls at once and reconnects on its own
      // backoff (1 s growing to 120 s by default): keep it within our resume window.
      'grpc.initial_reconnect_backoff_ms': BACKOFF_START_MS,
      'grpc.max_reconnect_backoff_ms': BACKOFF_MAX_MS,
    });
  }

  // Back to the first address with the first Hello; matches at the lost referee are over.
  fallBack(why) {
    this.log(`redirected referee ${JSON.stringify(this.address)} lost (${why}); back to ${this.opts.server}`);
    for (const id of this.started) this.ended.add(id);
    this.ticket = '';
    this.resumeToken = '';
    this.connect(this.opts.server);
  }

  log(...args) {
    console.error(`[${this.opts.name}]`, ...args);
  }

  send(msg) {
    if (this.call) this.call.write(msg);
  }

  hello() {
    const hello = {
      protocolVersion: PROTOCOL_VERSION,
      botName: this.opts.name,
      token: this.opts.token, // the ladder credential, also after a redirect
      resumeToken: this.resumeToken, // empty on the first stream; join_* is ignored on resume
      redirectTicket: this.resumeToken ? '' : this.ticket,
      maxMatches: 1,
      client: CLIENT,
      // It plays from each DecisionRequest's observation alone, so it asks for no Event
      // messages: a fifth of the traffic, and less work for the referee.
      skipEvents: true,
    };
    if (this.opts.table !== undefined) {
      hello.joinTable = { tableId: this.opts.table };
    } else if (this.opts.ladder !== undefined) {
      hello.joinLadder = { ladder: this.opts.ladder };
    } else {
      hello.joinQueue = { ruleset: { preset: this.opts.queue }, players: this.opts.players };
    }
    return { hello };
  }

  // Runs the session: one stream after another until the wanted matches have ended.
  async run() {
    let downSince = null;
    let delay = BACKOFF_START_MS;
    for (;;) {
      const { code, details, welcomed } = await this.stream();
      if (this.done) return;
      if (this.redirect) {
        const { address, ticket } = this.redirect;
        this.redirect = null;
        this.resumeToken = '';
        if (address && ticket) {
          this.log(`redirected to ${JSON.stringify(address)}`);
          this.ticket = ticket;
          this.connect(address);
        } else {
          this.fallBack('a Redirect without an address or ticket');
        }
        downSince = null;
        delay = BACKOFF_START_MS;
        continue;
      }
      if (welcomed) {
        downSince = Date.now(); // every stream that got a Welcome restarts the window
        delay = BACKOFF_START_MS;
      }
      downSince ??= Date.now();
      if (
        this.redirected &&
        (code === grpc.status.OK ||
          !RESUMABLE.has(code) ||
          Date.now() - downSince > REDIRECT_FOR_MS)
      ) {
        this.fallBack(`${grpc.status[code]} ${details}`);
        if (this.done) return;
        downSince = null;
        delay = BACKOFF_START_MS;
        continue;
      }
      // An OK close before our matches ended means the referee forgot us: stop retrying.
      if (code === grpc.status.OK || !RESUMABLE.has(code)) {
        throw new Error(`stream ended: ${grpc.status[code]} ${details}`);
      }
      if (Date.now() - downSince > RESUME_FOR_MS) {
        throw new Error(`gave up reconnecting after ${RESUME_FOR_MS} ms: ${grpc.status[code]} ${details}`);
      }
      this.log(`stream dropped (${grpc.status[code]}); reconnecting in ${delay} ms`);
      await sleep(delay);
      delay = Math.min(delay * 2, BACKOFF_MAX_MS);
    }
  }

  // One Play stream; resolves with its final status.
  stream() {
    return new Promise((resolve) => {
      let welcomed = false;
      let closeTimer = null;
      const call = this.client.Play();
      this.call = call;
      call.on('data', (response) => {
        welcomed ||= response.message === 'welcome';
        this.handle(response);
        if (this.done && !closeTimer) {
          call.end(); // half-close: the referee ends the stream once we have left
          closeTimer = setTimeout(() => call.cancel(), CLOSE_WAIT_MS);
        }
      });
      // grpc-js emits 'error' for every non-OK status (ours or the referee's) and then
      // 'status' for every status; listen to both, or an unhandled 'error' kills the process.
      call.on('error', () => {});
      call.on('status', ({ code, details }) => {
        clearTimeout(closeTimer);
        this.call = null;
        resolve({ code, details, welcomed });
      });
      call.write(this.hello());
      // The session remembers a Leave, but sending it again after a resume does no harm.
      if (this.started.size >= this.opts.matches) this.send({ leave: {} });
    });
  }

  handle(response) {
    const msg = response[response.message];
    switch (response.message) {
      case 'welcome':
        this.resumeToken = msg.resumeToken;
        this.ticket = ''; // used: a later drop here resumes with the resume token
        this.log(`welcome: session ${msg.sessionId}${msg.resumed ? ' (resumed)' : ''}`);
        break;
      case 'matchStart':
        if (this.started.has(msg.matchId)) break; // resent after a resume
        this.started.add(msg.matchId);
        this.log(`match ${msg.matchId}: seat ${msg.seat} of ${msg.players}`);
        // Leave = play the running matches to their end, start no new ones, then close.
        if (this.started.size === this.opts.matches) this.send({ leave: {} });
        break;
      case 'decision':
        this.pending.set(msg.matchId, msg);
        this.answer(msg, choose(msg));
        break;
      case 'rejection': {
        // Not expected (we only send legal indices); a refused answer may be retried.
        this.log(`match ${msg.matchId}: request ${msg.requestId} refused: ${msg.code} ${msg.message}`);
        const request = this.pending.get(msg.matchId);
        if (msg.retryAllowed && request?.requestId === msg.requestId) this.answer(request, 0);
        break;
      }
      case 'matchEnd': {
        this.pending.delete(msg.matchId);
        if (this.ended.has(msg.matchId)) break;
        this.ended.add(msg.matchId);
        const r = msg.result;
        // One line per match on stdout, for scripts and tests.
        console.log(JSON.stringify({
          matchId: msg.matchId,
          replayId: msg.replayId,
          reason: r.reason,
          draw: r.draw,
          winnerSide: r.winnerSide,
          penaltyTotals: r.penaltyTotals,
          forfeits: r.forfeits.length,
        }));
        break;
      }
      case 'redirect': // the referee ends the stream next; run() follows it
        this.redirect = msg;
        this.call?.end();
        break;
      default: // dealStart, event, dealEnd: this simple bot needs nothing from them
        break;
    }
  }

  answer(request, legalIndex) {
    if (legalIndex < 0 || legalIndex >= request.legalActions.length) return;
    // request_id is a uint64, kept as the decimal string it arrived as.
    this.send({ action: { matchId: request.matchId, requestId: request.requestId, legalIndex } });
    this.answered += 1;
    if (this.opts.dropAfter !== null && !this.dropped && this.answered >= this.opts.dropAfter) {
      this.dropped = true;
      this.log(`test hook: cancelling the stream after ${this.answered} answers`);
      // The answer may or may not reach the referee first; either way the resume sorts it out.
      setImmediate(() => this.call?.cancel());
    }
  }
}

async function main() {
  let opts;
  try {
    opts = parseFlags(process.argv.slice(2));
  } catch (err) {
    console.error(`usage error: ${err.message}`);
    process.exit(2);
  }
  const bot = new Bot(opts);
  try {
    await bot.run();
    bot.log(`done: ${bot.ended.size} match(es) played`);
  } catch (err) {
    bot.log(`error: ${err.message}`);
    process.exitCode = 1;
  } finally {
    bot.client.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
