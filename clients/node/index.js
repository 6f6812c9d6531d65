// The Kozel Arena bot package for Node.js 20: subclass Bot, implement choose(request), call
// runBot. One bidirectional Play stream to the referee (@grpc/grpc-js), the protocol loaded at
// run time from the .proto files (@grpc/proto-loader).
//
//   import { Bot, runBot } from 'kozel-bot';
//   class Mine extends Bot { choose(request) { return 0; } }   // an index into legalActions
//   await runBot(Mine, { server: '127.0.0.1:50051', table: 'T1', name: 'mine' });
//
// The protocol (proto/kozel/v1/referee.proto): send Hello, get Welcome (keep its resume_token),
// then MatchStart, DealStart, DecisionRequests (answer each with an ActionReply naming an index
// into legal_actions), Events, DealEnd and MatchEnd. After a dropped stream send Hello again
// with the resume_token: the referee resends MatchStart, DealStart and the pending request. A
// Redirect (a ladder shared by several referees) comes to a stream that plays no match: send
// the same Hello to its address with redirect_ticket set; keep the first address and go back
// there with the first Hello when that referee is lost. When a resume is refused (NOT_FOUND:
// the referee restarted, or a shared address reached another one), or a queue or ladder bot's
// referee stays away, start a new session at the first address and keep playing.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const PROTOCOL_VERSION = 1;
const CLIENT = 'kozel-node/0.2';
const RESUME_FOR_MS = 10_000; // how long to keep trying to resume after a drop
const REDIRECT_FOR_MS = 3_000; // how long to try a redirected address before the first one
const BACKOFF_START_MS = 100;
const BACKOFF_MAX_MS = 1_000;
const ADRIFT_BACKOFF_MAX_MS = 5_000; // between tries while no referee answers after losing one
const CLOSE_WAIT_MS = 5_000; // how long to wait for the referee to close after our last match
const ANSWERS_KEPT = 8; // answers remembered per match, to answer a resent request again

// Statuses after which the session can be resumed: the network broke, we cancelled the stream
// ourselves (dropAfter), or the referee cut a stream that read too slowly.
const RESUMABLE = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.CANCELLED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.INTERNAL,
  grpc.status.UNKNOWN,
]);

// The folder holding kozel/v1/*.proto: the protoDir option, else $KOZEL_PROTO_DIR, else the
// copy bundled in this package (npm pack puts it there), else ../../proto (a repository
// checkout, or `npm install <path to clients/node>`, which links to it).
export function findProtoDir(option) {
  const tried = [option, process.env.KOZEL_PROTO_DIR, path.join(HERE, 'proto'), path.join(HERE, '../../proto')];
  for (const dir of tried) {
    if (dir && fs.existsSync(path.join(dir, 'kozel/v1/referee.proto'))) return path.resolve(dir);
  }
  throw new Error(
    `kozel/v1/referee.proto not found in ${tried.filter(Boolean).join(', ')}: give the proto ` +
      'folder of Kozel Arena with the protoDir option or KOZEL_PROTO_DIR',
  );
}

// Generated code is not needed: proto-loader parses the .proto files when the bot starts.
// Field names become camelCase (legal_actions -> legalActions); uint64 request ids stay strings
// (a JS number cannot hold every uint64), enums arrive as their names, and `oneofs: true`
// adds a field naming the member that is set (PlayResponse.message === 'decision').
export function loadReferee(protoDir) {
  const definition = protoLoader.loadSync('kozel/v1/referee.proto', {
    includeDirs: [findProtoDir(protoDir)],
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).kozel.v1.RefereeService;
}

// One bot playing one match: runBot makes a fresh object per match. Override choose (it may
// be async) and any hook you need; hooks run in message order, one match at a time.
export class Bot {
  // Answer a DecisionRequest: an index into request.legalActions.
  choose(request) {
    throw new Error('implement choose(request): return an index into request.legalActions');
  }
  onMatchStart(msg) {} // your seat, the table, the ruleset, the clock
  onDealStart(msg) {} // your hand and the trump card
  onEvent(msg) {} // a play, a trick, a draw, a declaration, a notice (unless skipEvents)
  onRejection(msg) {} // an answer was refused; choose is asked again if a retry is allowed
  onDealEnd(msg) {} // every card revealed, with the scores
  onMatchEnd(msg) {} // the result, the replay id and the revealed seed
}

// The bot's own code raised while strict (the default off ladders): the run stopped.
export class BotError extends Error {}

// What happened in a run: matches won, drawn and lost, exceptions the bot's code raised and
// answers the referee refused. With KOZEL_REPORT set (kozel play and kozel conformance set
// it) every problem is appended there as a JSON line, as the Python SDK writes it.
export class Report {
  constructor(file = process.env.KOZEL_REPORT || null) {
    this.file = file;
    this.counts = { exception: 0, refusal: 0 };
    this.first = {};
    this.verdicts = new Map(); // match id -> won, drawn, lost, aborted
  }

  open() {
    this.write(''); // an empty report says: this bot reports, and nothing went wrong yet
  }

  exception(matchId, requestId, what, err) {
    const text = `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}`;
    const frame = String(err?.stack ?? '').split('\n').find((l) => l.trim().startsWith('at '));
    const where = frame ? frame.trim().replace(/^at /, '').replace(/file:\/\/[^ )]*\//, '') : '';
    return this.add({ kind: 'exception', match_id: matchId, request_id: Number(requestId), what, text, where });
  }

  refusal(matchId, requestId, code, sentence) {
    return this.add({ kind: 'refusal', match_id: matchId, request_id: Number(requestId), what: code, text: sentence, where: '' });
  }

  add(problem) {
    this.counts[problem.kind] += 1;
    this.first[problem.kind] ??= problem;
    this.write(`${JSON.stringify(problem)}\n`);
    return problem;
  }

  write(text) {
    if (!this.file) return;
    try {
      fs.appendFileSync(this.file, text);
    } catch {
      this.file = null; // a report that cannot be written must not stop the bot
    }
  }

  summary() {
    const n = (v) => [...this.verdicts.values()].filter((x) => x === v).length;
    const played = n('won') + n('drawn') + n('lost');
    let text = `${played} match${played === 1 ? '' : 'es'}: ${n('won')} won, ${n('drawn')} drawn, ${n('lost')} lost`;
    for (const [kind, label] of [['exception', 'exceptions in the bot'], ['refusal', 'refused']]) {
      const p = this.first[kind];
      if (p) text += `; ${this.counts[kind]} ${label} (first: ${p.what}: ${p.text}${p.where ? ` (${p.where})` : ''})`;
    }
    return text;
  }
}

function verdict(start, result) {
  if (result.reason === 'MATCH_END_REASON_ABORTED') return 'aborted';
  if (result.draw) return 'drawn';
  if (!start) return 'ended';
  if (result.penaltyTotals.length === 0) return result.winnerSide === start.seat ? 'won' : 'lost';
  const side = start.seating.find((p) => p.seat === start.seat)?.side ?? start.seat;
  return result.winnerSide === side ? 'won' : 'lost';
}

function envStrict(fallback) {
  const v = (process.env.KOZEL_STRICT ?? '').trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  return fallback;
}

// Client-side state of one match: its bot, a chain that feeds it messages in order, the
// latest request and the answers already given (to answer a resent request again).
class Match {
  constructor(id, bot) {
    this.id = id;
    this.bot = bot;
    this.chain = Promise.resolve();
    this.start = null;
    this.request = null;
    this.asked = new Set();
    this.answers = new Map(); // request id -> legal index
    this.refused = new Map(); // request id -> indexes refused
  }

  post(work) {
    this.chain = this.chain.then(work);
  }
}

// One runBot call: the session, its matches and its successive streams.
class Client {
  constructor(factory, opts) {
    const wants = [opts.table, opts.queue, opts.ladder].filter((v) => v !== undefined && v !== null);
    if (wants.length !== 1) throw new Error('give exactly one of table, queue (with players) and ladder');
    this.factory = factory.prototype instanceof Bot || factory === Bot ? () => new factory() : factory;
    this.opts = { name: 'node-bot', token: '', maxMatches: 1, skipEvents: true, ...opts };
    this.target = opts.matches ?? (opts.table !== undefined ? 1 : null); // null: until closed
    this.strict = opts.strict ?? envStrict(opts.ladder === undefined);
    this.report = opts.report ?? new Report();
    this.RefereeService = loadReferee(opts.protoDir);
    this.connect(opts.server); // the first address, kept through redirects
    this.resumeToken = ''; // from the last Welcome
    this.ticket = ''; // from a Redirect, sent in the next Hello until a Welcome
    this.redirect = null; // a Redirect received on the current stream
    this.matches = new Map(); // running matches by id
    this.done = new Set(); // ended or lost match ids
    this.results = [];
    this.lost = 0;
    this.leaveSent = false;
    this.everWelcomed = false;
    this.adrift = false; // the referee was lost: retried without end, with new sessions
    this.fatal = null;
    this.answered = 0; // answers sent, for dropAfter
    this.dropped = false;
    this.call = null;
  }

  log(...args) {
    console.error(`[${this.opts.name}]`, ...args);
  }

  get finished() {
    return this.target !== null && this.results.length + this.lost >= this.target && this.matches.size === 0;
  }

  // The current address came from a Redirect.
  get redirected() {
    return this.address !== this.opts.server || this.ticket !== '';
  }

  connect(address) {
    this.client?.close();
    this.address = address;
    this.client = new this.RefereeService(address, grpc.credentials.createInsecure(), {
      'grpc.keepalive_time_ms': 20_000,
      'grpc.keepalive_timeout_ms': 10_000,
      // While the connection is down grpc-js fails new calls at once and reconnects on its own
      // backoff (1 s growing to 120 s by default): keep it within our resume window.
      'grpc.initial_reconnect_backoff_ms': BACKOFF_START_MS,
      'grpc.max_reconnect_backoff_ms': BACKOFF_MAX_MS,
    });
  }

  // A new session at the first address with the first Hello: the old one is gone, and with
  // it the matches it ran (its referee finished or aborted them).
  restart(why) {
    for (const id of this.matches.keys()) this.lose(id, 'its session ended with its referee');
    this.log(`${why}; starting a new session at ${this.opts.server}`);
    this.ticket = '';
    this.resumeToken = '';
    this.leaveSent = false;
    this.connect(this.opts.server);
  }

  lose(id, why) {
    this.log(`match ${id} lost: ${why}`);
    this.matches.delete(id);
    this.done.add(id);
    this.lost += 1;
  }

  hello() {
    const hello = {
      protocolVersion: PROTOCOL_VERSION,
      botName: this.opts.name,
      token: this.opts.token, // the ladder credential, also after a redirect
      resumeToken: this.resumeToken, // empty on a new session; join_* is ignored on resume
      redirectTicket: this.resumeToken ? '' : this.ticket,
      maxMatches: this.opts.maxMatches,
      client: CLIENT,
      // Every request carries the seat's whole observation: a bot that plays from requests
      // alone asks for no Event messages (a fifth of the traffic).
      skipEvents: this.opts.skipEvents,
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
    this.report.open();
    let downSince = null;
    let delay = BACKOFF_START_MS;
    try {
      for (;;) {
        if (this.fatal) throw this.fatal;
        if (this.finished) return this.results;
        const { code, details, welcomed, resuming } = await this.stream();
        if (this.fatal) throw this.fatal;
        if (this.finished) return this.results;
        const why = `${grpc.status[code]} ${details}`;
        if (this.redirect) {
          const { address, ticket } = this.redirect;
          this.redirect = null;
          this.resumeToken = '';
          if (address && ticket) {
            this.log(`redirected to ${JSON.stringify(address)}`);
            this.ticket = ticket;
            this.connect(address);
          } else {
            this.restart(`a Redirect without an address or ticket from ${this.address}`);
          }
          [downSince, delay] = [null, BACKOFF_START_MS];
          continue;
        }
        if (welcomed) [downSince, delay] = [Date.now(), BACKOFF_START_MS]; // a new window
        downSince ??= Date.now();
        const down = Date.now() - downSince;
        if (
          this.redirected &&
          ((code === grpc.status.OK && this.matches.size === 0) || !RESUMABLE.has(code) || down > REDIRECT_FOR_MS)
        ) {
          this.restart(`redirected referee ${JSON.stringify(this.address)} lost (${why})`);
          [downSince, delay] = [null, BACKOFF_START_MS];
          continue;
        }
        if (resuming && code === grpc.status.NOT_FOUND) {
          this.restart(`the referee refused to resume the session (${why})`);
          [downSince, delay] = [null, BACKOFF_START_MS];
          continue;
        }
        if (code === grpc.status.OK && this.target === null && this.matches.size === 0) return this.results;
        if (!RESUMABLE.has(code) && code !== grpc.status.OK) throw new Error(`stream ended: ${why}`);
        if (down > RESUME_FOR_MS) {
          if (!(this.adrift || (this.everWelcomed && this.opts.table === undefined))) {
            throw new Error(`gave up reconnecting after ${RESUME_FOR_MS} ms: ${why}`);
          }
          if (this.resumeToken || this.matches.size) this.restart(`no referee answered at ${this.address} for ${RESUME_FOR_MS} ms`);
          this.adrift = true; // from now on, retried until a referee answers
        }
        const cap = this.adrift ? ADRIFT_BACKOFF_MAX_MS : BACKOFF_MAX_MS;
        const wait = Math.round(Math.min(delay, cap) * (0.75 + Math.random() / 2));
        this.log(`stream ended (${grpc.status[code]}); reconnecting in ${wait} ms`);
        await sleep(wait);
        delay = Math.min(delay * 2, cap);
      }
    } finally {
      this.client.close();
      const problems = this.report.counts.exception + this.report.counts.refusal;
      if (problems || this.results.length) this.log(this.report.summary());
    }
  }

  // One Play stream; resolves with its final status.
  stream() {
    const resuming = this.resumeToken !== '';
    return new Promise((resolve) => {
      let welcomed = false;
      let closeTimer = null;
      const call = this.client.Play();
      this.call = call;
      call.on('data', (response) => {
        welcomed ||= response.message === 'welcome';
        this.handle(response);
        if (this.finished && !closeTimer) {
          call.end(); // half-close: the referee ends the stream once we have left
          closeTimer = setTimeout(() => call.cancel(), CLOSE_WAIT_MS);
        }
      });
      // grpc-js emits 'error' for every non-OK status (ours or the referee's) and then
      // 'status' for every status; listen to both, or an unhandled 'error' kills the process.
      call.on('error', () => {});
      call.on('status', ({ code, details }) => {
        clearTimeout(closeTimer);
        if (this.call === call) this.call = null;
        resolve({ code, details, welcomed, resuming });
      });
      call.write(this.hello());
      // The session remembers a Leave, but sending it again after a resume does no harm.
      if (this.leaveSent) call.write({ leave: {} });
    });
  }

  send(msg) {
    if (this.call) this.call.write(msg);
  }

  sendLeave() {
    if (this.leaveSent) return;
    this.leaveSent = true;
    this.log(`sending Leave: no new match after the ${this.matches.size} running`);
    this.send({ leave: {} });
  }

  handle(response) {
    const kind = response.message;
    const msg = response[kind];
    if (kind === 'welcome') {
      this.resumeToken = msg.resumeToken;
      this.ticket = ''; // used: a later drop here resumes with the resume token
      this.everWelcomed = true;
      this.adrift = false;
      this.log(`welcome: session ${msg.sessionId}${msg.resumed ? ' (resumed)' : ''}`);
      return;
    }
    if (kind === 'redirect') {
      this.redirect = msg; // the referee ends the stream next; run() follows it
      this.call?.end();
      return;
    }
    if (!msg?.matchId || this.done.has(msg.matchId)) return; // unknown, or late for an ended match
    let m = this.matches.get(msg.matchId);
    if (!m) {
      if (kind === 'matchEnd') return;
      m = new Match(msg.matchId, this.factory());
      this.matches.set(msg.matchId, m);
      if (kind === 'matchStart') {
        m.start = msg;
        this.log(`match ${msg.matchId}: seat ${msg.seat} of ${msg.players}`);
      }
      // Leave = play the running matches to their end, start no new ones, then close.
      if (this.target !== null && this.results.length + this.lost + this.matches.size >= this.target) this.sendLeave();
    } else if (kind === 'matchStart') {
      return; // resent after a resume
    }
    switch (kind) {
      case 'decision':
        this.onDecision(m, msg);
        return;
      case 'matchEnd':
        this.matches.delete(m.id);
        this.done.add(m.id);
        this.results.push(msg);
        this.report.verdicts.set(m.id, verdict(m.start, msg.result));
        this.log(`match ${m.id} ended: ${this.report.verdicts.get(m.id)} (${msg.result.reason})`);
        break;
      case 'rejection':
        m.post(() => this.onRejection(m, msg));
        return;
      default:
        break;
    }
    const hook = `on${kind[0].toUpperCase()}${kind.slice(1)}`;
    m.post(() => this.hook(m, hook, msg));
  }

  onDecision(m, request) {
    const id = request.requestId;
    m.request = request;
    if (m.answers.has(id)) {
      this.reply(request, m.answers.get(id)); // resent after a resume: the same answer
      return;
    }
    if (m.asked.has(id)) return; // the bot is on it
    m.asked.add(id);
    m.post(() => this.decide(m, request));
  }

  async decide(m, request) {
    const id = request.requestId;
    if (m.request?.requestId !== id) return; // superseded (a timeout) before the bot saw it
    let index;
    try {
      index = await m.bot.choose(request);
      if (!Number.isInteger(index) || index < 0 || index >= request.legalActions.length) {
        throw new RangeError(`choose returned ${index}, not an index into the ${request.legalActions.length} legal actions`);
      }
    } catch (err) {
      if (!this.botFailed(m, id, 'choose', err)) return;
      index = 0;
    }
    const refused = m.refused.get(id) ?? [];
    if (refused.includes(index) && !this.strict) {
      const other = request.legalActions.findIndex((_, i) => !refused.includes(i));
      index = other < 0 ? 0 : other;
      this.log(`match ${m.id}: the bot repeated a refused answer; sending index ${index} instead (strict off)`);
    }
    m.answers.set(id, index);
    if (m.answers.size > ANSWERS_KEPT) m.answers.delete(m.answers.keys().next().value);
    if (this.matches.get(m.id) !== m || m.request?.requestId !== id) return; // ended, or timed out
    this.reply(request, index);
  }

  async onRejection(m, rej) {
    this.report.refusal(m.id, rej.requestId, rej.code, rej.message);
    this.log(`match ${m.id}: answer to request ${rej.requestId} refused (${rej.code}): ${rej.message}`);
    await this.hook(m, 'onRejection', rej);
    const request = m.request;
    if (!rej.retryAllowed || rej.code === 'ERROR_CODE_UNKNOWN_REQUEST' || request?.requestId !== rej.requestId) return;
    if (m.answers.has(rej.requestId)) {
      m.refused.set(rej.requestId, [...(m.refused.get(rej.requestId) ?? []), m.answers.get(rej.requestId)]);
      m.answers.delete(rej.requestId);
    }
    await this.decide(m, request);
  }

  async hook(m, name, msg) {
    try {
      await m.bot[name](msg);
    } catch (err) {
      this.botFailed(m, msg?.requestId ?? 0, name, err);
    }
  }

  // The bot's `what` threw: count and log it. Strict, the run stops (false); else go on.
  botFailed(m, requestId, what, err) {
    const problem = this.report.exception(m.id, requestId, what, err);
    this.log(`match ${m.id}: ${what} failed on request ${requestId}: ${err?.stack ?? err}`);
    if (!this.strict) {
      this.log(`strict off: carrying on${what === 'choose' ? ', answering legal index 0' : ''}`);
      return true;
    }
    if (!this.fatal) {
      this.fatal = new BotError(`the bot's ${what} threw in match ${m.id}, request ${requestId}: ${problem.text} (${problem.where})`, { cause: err });
      this.log('stopping (strict)');
      this.call?.cancel();
    }
    return false;
  }

  reply(request, legalIndex) {
    // request_id is a uint64, kept as the decimal string it arrived as.
    this.send({ action: { matchId: request.matchId, requestId: request.requestId, legalIndex } });
    this.answered += 1;
    if (this.opts.dropAfter && !this.dropped && this.answered >= this.opts.dropAfter) {
      this.dropped = true;
      this.log(`test hook: cancelling the stream after ${this.answered} answers`);
      // The answer may or may not reach the referee first; either way the resume sorts it out.
      const call = this.call;
      setImmediate(() => call?.cancel());
    }
  }
}

// Play until done: `factory` is a Bot subclass (or a function returning a Bot), one per
// match. Options: server (host:port), one of table, queue with players, or ladder (with
// token); name, matches (leave after this many; a table bot plays its one match, a queue or
// ladder bot plays until the referee closes), maxMatches (at once, default 1), skipEvents
// (default true), strict (default: on, except on a ladder; KOZEL_STRICT overrides), protoDir,
// report (a Report, filled in place), dropAfter (test hook). Resolves to the MatchEnd
// messages; rejects with a BotError (the bot's code threw, strict) or an Error (a refusal
// that cannot pass: unknown table, bad token, protocol).
export async function runBot(factory, options) {
  return new Client(factory, options).run();
}
