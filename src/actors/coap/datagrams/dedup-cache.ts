import type { Server as CoapServer } from 'coap';

// node-coap keeps every response it sends in an LRU keyed by (peer, message ID), to answer a
// retransmitted request with the same bytes (RFC 7252 §4.5). Its budget counts only each
// datagram's bytes, but two things keep far more alive, as a flood of small requests showed
// (60,000 heartbeats with a 45-byte 4.00 answer: the coap thread's heap went from 10 to 132 MB
// while its cache counted 0.6 MB):
//
// - each sender (RetrySend) starts a timer of MAX_RTT (100 s) even for a piggybacked ACK that is
//   never retransmitted, and the timer holds the sender, its error listener, the response
//   stream and the request: about 4.6 KB of heap per answer for 100 s, whatever the budget;
// - the cached datagram carries that sender as a property, so the LRU holds it as well.
//
// Here a piggybacked or non-confirmable answer (never retransmitted) has its sender's timers
// cleared once sent, and the cache keeps a plain copy of its bytes, counted with the
// bookkeeping that goes with it. A confirmable separate response keeps its sender (it must
// retransmit until acknowledged) and is counted at what it really holds, so
// coap.dedup_cache_bytes bounds the memory, not just the datagrams.

/** Heap per held answer besides its bytes: the key, the copy's Buffer object, the LRU slot (measured ~420 B). */
export const DEDUP_ENTRY_OVERHEAD_BYTES = 512;
/** A confirmable separate response holds its sender, response stream and request (measured ~4.6 KB). */
export const DEDUP_RETRANSMITTED_ENTRY_BYTES = 6144;

type CachedDatagram = Buffer & { sender?: { reset(): void } };

/**
 * Keeps an answer sent without node-coap (a piggybacked ACK, never retransmitted) under `key`,
 * where node-coap looks when the request comes again. The cache holds the datagram as it is:
 * nothing may write to it afterwards.
 */
export type RememberAnswer = (key: string, datagram: Buffer) => void;

/** Bounds node-coap's cache as above; returns how the front-end's own answers join it. */
export function boundDedupCache(server: CoapServer): RememberAnswer {
  const lru = server._lru;
  const set = lru.set;
  lru.set = function (this: typeof lru, key: string, datagram: CachedDatagram, options?: Parameters<typeof set>[2]) {
    // Message type: bits 4-5 of the first byte; 0 is confirmable (retransmitted until acknowledged).
    const confirmable = ((datagram[0]! >> 4) & 0x3) === 0;
    if (confirmable) return set.call(this, key, datagram, { ...options, size: datagram.length + DEDUP_RETRANSMITTED_ENTRY_BYTES });
    // node-coap attaches the sender and sends right after this call returns.
    setImmediate(() => datagram.sender?.reset());
    return set.call(this, key, Buffer.from(datagram), { ...options, size: datagram.length + DEDUP_ENTRY_OVERHEAD_BYTES });
  } as typeof set;
  return (key, datagram) => {
    set.call(lru, key, datagram, { size: datagram.length + DEDUP_ENTRY_OVERHEAD_BYTES });
  };
}
