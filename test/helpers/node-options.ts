import type { ActorNodeOptions } from '../../src/supervisor/actor-host.js';
import { TAP_FIRST } from './tap-env.js';

// tap starts each test file with its own loaders (`--import` of its process-info hook, and of
// its mock hook unless that plugin is off, as package.json has it: no test uses tap's mocks),
// in execArgv and NODE_OPTIONS. Every thread and child process of a server under test would
// load them again and send each module it loads through them: a server's start took 3.5 s
// instead of 0.9. Coverage is off, so the servers and processes the tests start run without
// them.
//
// Leaving them out of a child's environment is not enough: tap's process-info hook patches
// spawn in the test's process and puts its loader back into the NODE_OPTIONS of every child,
// whatever the caller passed (a spawned server started on 3.0 s of CPU instead of 1.25, and
// the suite spawns hundreds of servers, agents and CLI runs). So a node child is started
// through `env` (nodeChild), which sets NODE_OPTIONS again after the hook has had its say.

// tap-first.ts (which `npm test` adds, tap-env.ts) does nothing outside a test file's process.
const fromTap = (arg: string) => arg.includes('@tapjs/') || arg.includes(TAP_FIRST);

/**
 * This process's Node options without tap's loaders, for the actor threads of an in-process
 * server: from its arguments and from NODE_OPTIONS, which Node reads again for every thread.
 */
export const ACTOR_NODE_OPTIONS: ActorNodeOptions = {
  execArgv: process.execArgv.filter((arg) => !fromTap(arg)),
  nodeOptions: withoutTap(process.env.NODE_OPTIONS),
};

function withoutTap(nodeOptions: string | undefined): string {
  return (nodeOptions ?? '').split(/\s+/).filter((arg) => arg !== '' && !fromTap(arg)).join(' ');
}

/**
 * The environment of a child process: this one's, with tap's loaders left out of NODE_OPTIONS,
 * and without a UPDATER_LOG_PRETTY of the person running the tests (they read JSON lines).
 */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { UPDATER_LOG_PRETTY: _mine, ...env } = process.env;
  return { ...env, NODE_OPTIONS: withoutTap(process.env.NODE_OPTIONS), ...extra };
}

/** `env`, which every Linux has there: it replaces itself with the program, so the PID is the program's. */
const ENV = '/usr/bin/env';

/**
 * spawn()'s command, arguments and environment for `node ARGS…` without tap's loaders, with
 * `extra` added to the environment (see above for why through `env`).
 */
export function nodeChild(args: readonly string[], extra: NodeJS.ProcessEnv = {}): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  const env = childEnv(extra);
  return { command: ENV, args: [`NODE_OPTIONS=${env.NODE_OPTIONS ?? ''}`, process.execPath, ...args], env };
}
