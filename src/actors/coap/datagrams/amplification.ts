import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export { ECHO_OPTION } from '../../../shared/wire/echo.js';

// Amplification over UDP (RFC 7252 §11.3, RFC 9175 §2.4 item 3). A request's source address
// is not verified, so a forged request could make the server send a victim far more than the
// forger sent. The rule (docs/coap.md, "Amplification"): an answer to a source that has not
// proved it receives what is sent to it is at most AMPLIFICATION_FACTOR times the request
// datagram. A source proves it by echoing an Echo option (RFC 9175) that the server sent it.
//
// Stateless: an Echo value is the time it was made and an HMAC of (source address, time)
// under a key made at start, so the server keeps nothing per address (hostile traffic cannot
// grow it) and a value is good for ECHO_LIFETIME_MS from any request of that address. A
// restart changes the key: devices then prove themselves once more.

/** An answer to an unproven source is at most this many times the request datagram. */
export const AMPLIFICATION_FACTOR = 3;
/** How long an Echo value proves its address. */
export const ECHO_LIFETIME_MS = 10 * 60_000;

const TIME_BYTES = 4;
const MAC_BYTES = 8;

export class AddressProof {
  constructor(private readonly key: Buffer = randomBytes(32), private readonly now: () => number = Date.now) {}

  /** A fresh Echo value for `address` (12 bytes: seconds since the epoch, then the MAC). */
  echoFor(address: string): Buffer {
    const seconds = Math.floor(this.now() / 1000);
    const value = Buffer.alloc(TIME_BYTES + MAC_BYTES);
    value.writeUInt32BE(seconds >>> 0, 0);
    this.mac(address, seconds).copy(value, TIME_BYTES);
    return value;
  }

  /** Whether `echo` is a value this server made for `address` within the last ECHO_LIFETIME_MS. */
  proves(address: string, echo: Buffer | undefined): boolean {
    if (!echo || echo.length !== TIME_BYTES + MAC_BYTES) return false;
    const seconds = echo.readUInt32BE(0);
    const age = this.now() - seconds * 1000;
    if (age < -1000 || age > ECHO_LIFETIME_MS) return false;
    return timingSafeEqual(echo.subarray(TIME_BYTES), this.mac(address, seconds));
  }

  private mac(address: string, seconds: number): Buffer {
    return createHmac('sha256', this.key).update(`${address}\n${seconds}`).digest().subarray(0, MAC_BYTES);
  }
}

/** The size of an answer datagram: header, token, options, then the payload marker and payload. */
export function answerBytes(tokenBytes: number, payloadBytes: number, optionBytes: number): number {
  return 4 + tokenBytes + optionBytes + (payloadBytes > 0 ? 1 + payloadBytes : 0);
}

/** The most bytes an answer to an unproven request of `requestBytes` may have. */
export function answerBudget(requestBytes: number): number {
  return AMPLIFICATION_FACTOR * requestBytes;
}
