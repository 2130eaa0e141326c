import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
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
  for (const path of reserved) {
    try { unlinkSync(path); } catch { /* already gone */ }
  }
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

function reserve(port: number): boolean {
  const path = join(RESERVATIONS, String(port));
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      reserved.add(path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || holderAlive(path)) return false;
      try { unlinkSync(path); } catch { /* another process took it over first */ }
    }
  }
  return false;
}

function release(port: number): void {
  const path = join(RESERVATIONS, String(port));
  reserved.delete(path);
  try { unlinkSync(path); } catch { /* already gone */ }
}

/** A reservation left by a process that has ended (a killed run) no longer holds. */
function holderAlive(path: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(path, 'utf8'));
  } catch {
    return true; // being written or removed right now: leave it to its holder
  }
  if (!Number.isInteger(pid) || pid <= 0) return true; // being written: the PID is not in yet
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
