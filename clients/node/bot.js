#!/usr/bin/env node
// An example Kozel Arena bot for Node.js 20, on the package in index.js (Bot, runBot):
//
//   node bot.js --server 127.0.0.1:50051 --table T1 [--name node-bot] [--matches 1]
//   node bot.js --server 127.0.0.1:50051 --queue classic --players 2 [--matches 3]
//   node bot.js --server 127.0.0.1:50051 --ladder main --token SECRET [--matches 10]
//
// It prints one JSON line per finished match on stdout and its log on stderr; it exits 0 once
// its matches have ended, 1 if the referee refused it, the session could not be resumed or its
// code threw (strict), 2 on bad flags.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Bot, runBot } from './index.js';

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

export class ExampleBot extends Bot {
  choose(request) {
    return choose(request);
  }

  onMatchEnd(msg) {
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
  }
}

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
      'proto-dir': { type: 'string' }, // else $KOZEL_PROTO_DIR, the bundled copy, ../../proto
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
    protoDir: values['proto-dir'],
    dropAfter: values['drop-after'] !== undefined ? int('drop-after', 1) : null,
  };
}

async function main() {
  let opts;
  try {
    opts = parseFlags(process.argv.slice(2));
  } catch (err) {
    console.error(`usage error: ${err.message}`);
    process.exit(2);
  }
  try {
    const ends = await runBot(ExampleBot, opts);
    console.error(`[${opts.name}] done: ${ends.length} match(es) played`);
  } catch (err) {
    console.error(`[${opts.name}] error: ${err.message}`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
