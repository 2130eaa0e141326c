import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';

// A closed-loop CoAP load generator: `inFlight` confirmable requests outstanding at all times,
// each slot sending its next request as soon as its answer arrives. Requests are one template
// datagram with the message id and the 4-byte token patched in, answers are matched by token
// from the raw bytes: the client must cost far less than the servers it measures.

export interface LoadResult {
  perSecond: number;
  answered: number;
  /** Answers by response code, over the measured window. */
  codes: Record<string, number>;
  /** Requests given up after LOST_AFTER_MS without an answer. */
  lost: number;
  /** 2.05 answers over the whole load, warm-up included (what the server's CPU over the whole load paid for). */
  okAll: number;
}

const LOST_AFTER_MS = 2_000;
const TOKEN_AT = 4;

/**
 * `template` must be a CON request with a 4-byte token. `vary`, when given, rewrites bytes of
 * each request before it is sent (the n-th request overall), e.g. to cycle device ids.
 */
export async function coapLoad(port: number, template: Buffer, inFlight: number, warmupMs: number, measureMs: number, vary?: (datagram: Buffer, n: number) => void): Promise<LoadResult> {
  if ((template[0]! & 0x0f) !== 4) throw new RangeError('the template request must carry a 4-byte token');
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  socket.setRecvBufferSize(4 * 1024 * 1024);
  const slots = Array.from({ length: inFlight }, () => ({ buffer: Buffer.from(template), generation: 0, sentAt: 0 }));
  let messageId = 0;
  let sent = 0;
  let measuring = false;
  let stopped = false;
  let answered = 0;
  let lost = 0;
  let okAll = 0;
  const codes: Record<string, number> = {};

  const send = (index: number) => {
    const slot = slots[index]!;
    slot.generation = (slot.generation + 1) & 0xffff;
    messageId = (messageId + 1) & 0xffff;
    slot.buffer.writeUInt16BE(messageId, 2);
    slot.buffer.writeUInt16BE(index, TOKEN_AT);
    slot.buffer.writeUInt16BE(slot.generation, TOKEN_AT + 2);
    slot.sentAt = Date.now();
    vary?.(slot.buffer, sent++);
    socket.send(slot.buffer, port, '127.0.0.1');
  };

  socket.on('message', (msg) => {
    if (msg.length < TOKEN_AT + 4) return;
    const type = (msg[0]! >> 4) & 0x3;
    const code = msg[1]!;
    // A separate response comes as CON and must be acknowledged, or the server repeats it.
    if (type === 0) socket.send(Buffer.from([0x60, 0x00, msg[2]!, msg[3]!]), port, '127.0.0.1');
    if (code === 0 || (msg[0]! & 0x0f) !== 4) return;
    const index = msg.readUInt16BE(TOKEN_AT);
    const slot = slots[index];
    if (!slot || msg.readUInt16BE(TOKEN_AT + 2) !== slot.generation) return;
    if (code === 0x45) okAll++;
    if (measuring) {
      answered++;
      const text = `${code >> 5}.${String(code & 0x1f).padStart(2, '0')}`;
      codes[text] = (codes[text] ?? 0) + 1;
    }
    if (!stopped) send(index);
  });
  const sweeper = setInterval(() => {
    const now = Date.now();
    slots.forEach((slot, index) => {
      if (now - slot.sentAt > LOST_AFTER_MS) {
        if (measuring) lost++;
        send(index);
      }
    });
  }, 250);

  slots.forEach((_, index) => send(index));
  await sleep(warmupMs);
  measuring = true;
  const started = process.hrtime.bigint();
  await sleep(measureMs);
  measuring = false;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  stopped = true;
  clearInterval(sweeper);
  await sleep(100);
  socket.close();
  return { perSecond: Math.round((codes['2.05'] ?? 0) / seconds), answered, codes, lost, okAll };
}

/** Samples a process's resident set size while `during` runs; resolves with the peak in bytes. */
export async function peakRss<T>(pid: number, during: Promise<T>, everyMs = 100): Promise<{ result: T; peakRssBytes: number }> {
  let peak = 0;
  const sample = () => {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (match) peak = Math.max(peak, Number(match[1]) * 1024);
    } catch {
      // The process is gone: the peak so far stands.
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  try {
    const result = await during;
    sample();
    return { result, peakRssBytes: peak };
  } finally {
    clearInterval(timer);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
