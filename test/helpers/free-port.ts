import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A test picks a port, writes it into a configuration, and the server binds it a moment (or a
// second, for a spawned process) later. A port the kernel handed out by itself (bind to port 0)
// is the worst choice for that: it comes from the ephemeral range, where the kernel also takes
// the local port of every outgoing connection and of every other process's port 0, so in a busy
// suite it could be taken again in between ("cannot listen on 127.0.0.1:34661"). So a port is
// picked here from below the ephemeral range, where the kernel never assigns one unasked, and
// reserved against the suite's other processes by a file that names the holder's PID.

/** The reservations, one file a port; per user, since another user could not write in this one's. */
export const RESERVATIONS = join(tmpdir(), `updater-test-ports-${process.getuid?.() ?? 'user'}`);
const reserved = new Set<string>();
process.once('exit', () => {
  for (const path of reserved) removeIfMine(path);
});

/** The ports a test may pick: the widest span outside the kernel's ephemeral range. */
export function testPortSpan(rangeText = readEphemeralRange()): { low: number; high: number } {
  const [first = NaN, last = NaN] = rangeText.trim().split(/\s+/).map(Number);
  if (!Number.isInteger(first) || !Number.isInteger(last)) return { low: 20_000, high: 32_767 };
  const below = { low: 10_000, high: first - 1 };
  const above = { low: last + 1, high: 65_535 };
  return below.high - below.low >= above.high - above.low ? below : above;
}

function readEphemeralRange(): string {
  try {
    return readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
  } catch {
    return '32768 60999'; // Linux's default
  }
}

/**
 * A port on 127.0.0.1, free for TCP and UDP now, outside the ephemeral range and reserved for
 * this process until it ends, so no other test process of the suite picks it meanwhile. `span`
 * narrows the choice (its own test does).
 */
export async function freePort(span = testPortSpan()): Promise<number> {
  if (span.high < span.low) throw new Error(`no room for test ports outside the ephemeral range (${readEphemeralRange().trim()})`);
  mkdirSync(RESERVATIONS, { recursive: true });
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = span.low + Math.floor(Math.random() * (span.high - span.low + 1));
    if (!reserve(port)) continue;
    if (await bindable(port)) return port;
    release(port);
  }
  throw new Error(`no free port found in ${span.low}-${span.high} after 500 tries`);
}

/**
 * Takes the port's reservation file. Each file appears whole, the holder's PID in it (a link of
 * a file already written), so no reader sees it empty or half written. A file whose holder has
 * ended (a killed run) is taken over, but only by the one process that first creates the
 * port's `.takeover` file, and only if the file still names that ended holder: two processes
 * that both found it stale would otherwise each remove the other's new reservation. (One
 * killed during a takeover leaves its `.takeover` file: that port is skipped from then on.)
 */
function reserve(port: number): boolean {
  const path = join(RESERVATIONS, String(port));
  const mine = join(RESERVATIONS, `${port}.${process.pid}.new`);
  writeFileSync(mine, String(process.pid));
  try {
    if (linkOnce(mine, path)) return held(path);
    const stale = holderOf(path);
    if (stale === undefined || alive(stale)) return false;
    const takeover = `${path}.takeover`;
    if (!linkOnce(mine, takeover)) return false; // another process is taking it over
    try {
      if (holderOf(path) !== stale) return false;
      unlinkSync(path);
      return linkOnce(mine, path) && held(path);
    } finally {
      unlinkSync(takeover);
    }
  } finally {
    unlinkSync(mine);
  }
}

/** Links `file` as `name`; false when `name` exists. */
function linkOnce(file: string, name: string): boolean {
  try {
    linkSync(file, name);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

function held(path: string): true {
  reserved.add(path);
  return true;
}

function release(port: number): void {
  const path = join(RESERVATIONS, String(port));
  reserved.delete(path);
  removeIfMine(path);
}

/** Removes a reservation file if it still names this process: never another's. */
function removeIfMine(path: string): void {
  if (holderOf(path) !== process.pid) return;
  try {
    unlinkSync(path);
  } catch {
    // Gone already.
  }
}

/** The PID a reservation file names, or undefined when there is none (or it cannot be read). */
function holderOf(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Another program (a database, a service of the machine) may listen on a port we reserved. */
async function bindable(port: number): Promise<boolean> {
  const tcp = await new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
  if (!tcp) return false;
  return new Promise<boolean>((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', () => { socket.close(); resolve(false); });
    socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
  });
}
