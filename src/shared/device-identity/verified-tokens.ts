// The device tokens a front-end has verified, kept outside the JavaScript heap.
//
// With devices.auth on, a heartbeat's token check must cost about 1 µs. A Map from token to
// claims answered in about 1 µs, but its 100,000 entries (a string, an object and two more
// strings each) were 400,000 objects for every full GC to mark: 21 ms a collection against 7 ms
// with auth off, measured in the HTTP thread under the heartbeat bench. Here a verified token is
// one fixed row of bytes in an open-addressing table (linear probing) and the GC sees one buffer.
//
// A row (ROW_BYTES), laid out so that a lookup reads its first 64 bytes (one cache line) and
// the device id check its second:
//   0       state: 0 empty, 1 used
//   1       owner length: the device id last matched with the token, as 1..OWNER_BYTES Latin-1
//           bytes; 0 when none is kept (none matched yet, or a longer or non-Latin-1 id)
//   2       revoked: the answer of the revocation check made at epoch `checked`
//   4..8    expires_at u32
//   8..62   the token's characters after its prefix (TOKEN_TAIL)
//   64..68  issued_at u32            68..72  checked u32
//   72..88  id_hash (16 bytes)
//   88..128 owner (OWNER_BYTES)
//
// The table grows by doubling while under half full, up to the slots that hold maxEntries at
// three quarters full. Past that it keeps what it holds: a token that does not fit is held in
// an overflow row (one past the table, which no lookup reaches) for the request that brought
// it, and is verified afresh the next time. Once as many tokens have overflowed as the table
// holds, the tokens it keeps are mostly gone (renewed, or their devices away), and it empties
// and starts again. Emptying at the first token past the limit made a fleet larger than the
// table, checking in in turn, forget each token just before its device came back: every
// request paid the MAC again. Growing, emptying and overflowing change `generation`, so a
// pass to a row from before is known stale.

const ROW_BYTES = 128;
const ROW_WORDS = ROW_BYTES / 4;
const OWNER_LENGTH = 1;
const REVOKED = 2;
const EXPIRES_AT_WORD = 1;
const TOKEN = 8;
/** Characters of a token after its prefix ("d1."), all stored. */
export const TOKEN_TAIL = 54;
const ISSUED_AT_WORD = 16;
const CHECKED_WORD = 17;
const ID_HASH = 72;
export const ID_HASH_BYTES = 16;
const OWNER = ID_HASH + ID_HASH_BYTES;
const OWNER_BYTES = ROW_BYTES - OWNER;
const FIRST_SLOTS = 1024;
/** The tail characters the slot is hashed from: 33 to 37 encode bits of the MAC only. */
const HASHED_FROM = 33;
const HASHED_TO = 38;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** Rows are numbered below this in every table: a pass carries its generation above it. */
export const ROW_LIMIT = 2 ** 24;
/**
 * Generations count round within this, so that a pass (generation × ROW_LIMIT + row, at most
 * GENERATIONS × ROW_LIMIT − 1 = Number.MAX_SAFE_INTEGER) stays an exact integer: tokens
 * overflowing at every request would otherwise carry it past 2^53 within hours, and a pass
 * would then name another row. A pass lives for one request, never for 2^29 changes.
 */
export const GENERATIONS = 2 ** 29;

export class VerifiedTokens {
  private slots = FIRST_SLOTS;
  /** The table's rows, then the overflow row (row `slots`). */
  private rows = new Uint8Array((FIRST_SLOTS + 1) * ROW_BYTES);
  private words = new Uint32Array(this.rows.buffer);
  private entries = 0;
  /** Tokens held in the overflow row since the table was last emptied. */
  private overflowed = 0;
  private readonly maxSlots: number;
  /** Changes (modulo GENERATIONS) whenever rows move (growth) or go (emptied, or the overflow row taken again). */
  generation = 0;

  /** `maxEntries`: tokens kept; past them, tokens overflow (see above). */
  constructor(readonly maxEntries: number) {
    this.maxSlots = Math.max(FIRST_SLOTS, 2 ** Math.ceil(Math.log2(maxEntries / 0.75)));
    if (this.maxSlots > ROW_LIMIT) throw new RangeError(`at most ${(ROW_LIMIT * 0.75) | 0} verified tokens`);
  }

  get size(): number {
    return this.entries;
  }

  /**
   * The row of the token whose tail starts at `tail` in `text` (long enough: the caller checks),
   * or -1. The tail is read in place: a token is often part of a header.
   */
  find(text: string, tail: number): number {
    const { rows } = this;
    for (let row = this.slotOf(text, tail); ; row = (row + 1) & (this.slots - 1)) {
      const base = row * ROW_BYTES;
      if (rows[base] === 0) return -1;
      let i = 0;
      while (i < TOKEN_TAIL && rows[base + TOKEN + i] === text.charCodeAt(tail + i)) i++;
      if (i === TOKEN_TAIL) return row;
    }
  }

  /**
   * Keeps a verified token (not kept yet); answers its row, the overflow row when the table is
   * full (good until the next token overflows). May grow or empty the table.
   */
  add(text: string, tail: number, issuedAt: number, expiresAt: number, idHash: Uint8Array): number {
    if (this.entries + 1 > this.slots / 2 && this.slots < this.maxSlots) this.grow();
    else if (this.entries >= this.maxEntries) {
      if (this.overflowed < this.maxEntries) {
        this.overflowed++;
        this.nextGeneration();
        const row = this.slots;
        this.rows.fill(0, row * ROW_BYTES, (row + 1) * ROW_BYTES);
        return this.write(row, text, tail, issuedAt, expiresAt, idHash);
      }
      this.clear();
    }
    let row = this.slotOf(text, tail);
    while (this.rows[row * ROW_BYTES] !== 0) row = (row + 1) & (this.slots - 1);
    this.entries++;
    return this.write(row, text, tail, issuedAt, expiresAt, idHash);
  }

  /** Writes a token into an empty row. */
  private write(row: number, text: string, tail: number, issuedAt: number, expiresAt: number, idHash: Uint8Array): number {
    const base = row * ROW_BYTES;
    const { rows, words } = this;
    rows[base] = 1;
    words[row * ROW_WORDS + ISSUED_AT_WORD] = issuedAt;
    words[row * ROW_WORDS + EXPIRES_AT_WORD] = expiresAt;
    rows.set(idHash.subarray(0, ID_HASH_BYTES), base + ID_HASH);
    for (let i = 0; i < TOKEN_TAIL; i++) rows[base + TOKEN + i] = text.charCodeAt(tail + i);
    return row;
  }

  issuedAt(row: number): number {
    return this.words[row * ROW_WORDS + ISSUED_AT_WORD]!;
  }

  expiresAt(row: number): number {
    return this.words[row * ROW_WORDS + EXPIRES_AT_WORD]!;
  }

  /** The id hash the token was issued for, hex (as revocations name devices). */
  idHashHex(row: number): string {
    const base = row * ROW_BYTES + ID_HASH;
    return Buffer.from(this.rows.buffer, base, ID_HASH_BYTES).toString('hex');
  }

  /** Whether the id hash equals `digest`'s first ID_HASH_BYTES, given as a Latin-1 string. */
  idHashIs(row: number, digest: string): boolean {
    const base = row * ROW_BYTES + ID_HASH;
    for (let i = 0; i < ID_HASH_BYTES; i++) if (this.rows[base + i] !== digest.charCodeAt(i)) return false;
    return true;
  }

  /** The revocation answer kept for `epoch`: undefined when it was checked at another one. */
  revokedAt(row: number, epoch: number): boolean | undefined {
    return this.words[row * ROW_WORDS + CHECKED_WORD] === epoch ? this.rows[row * ROW_BYTES + REVOKED] === 1 : undefined;
  }

  keepRevoked(row: number, epoch: number, revoked: boolean): void {
    this.words[row * ROW_WORDS + CHECKED_WORD] = epoch;
    this.rows[row * ROW_BYTES + REVOKED] = revoked ? 1 : 0;
  }

  /** Whether `deviceId` is the owner kept for the row. */
  ownerIs(row: number, deviceId: string): boolean {
    const base = row * ROW_BYTES;
    const length = this.rows[base + OWNER_LENGTH]!;
    if (length === 0 || deviceId.length !== length) return false;
    for (let i = 0; i < length; i++) if (this.rows[base + OWNER + i] !== deviceId.charCodeAt(i)) return false;
    return true;
  }

  /** Keeps `deviceId` as the row's owner when it fits (Latin-1, at most OWNER_BYTES). */
  keepOwner(row: number, deviceId: string): void {
    const base = row * ROW_BYTES;
    this.rows[base + OWNER_LENGTH] = 0;
    if (deviceId.length > OWNER_BYTES) return;
    for (let i = 0; i < deviceId.length; i++) {
      const code = deviceId.charCodeAt(i);
      if (code > 0xff) return;
      this.rows[base + OWNER + i] = code;
    }
    this.rows[base + OWNER_LENGTH] = deviceId.length;
  }

  clear(): void {
    this.rows.fill(0);
    this.entries = 0;
    this.overflowed = 0;
    this.nextGeneration();
  }

  private nextGeneration(): void {
    this.generation = (this.generation + 1) % GENERATIONS;
  }

  /**
   * A slot from characters the token's MAC alone decides, so no one can aim many tokens at one
   * slot without the key: FNV-1a over them.
   */
  private slotOf(text: string, tail: number): number {
    let h = FNV_OFFSET;
    for (let i = HASHED_FROM; i < HASHED_TO; i++) h = Math.imul(h ^ text.charCodeAt(tail + i), FNV_PRIME);
    return (h >>> 0) & (this.slots - 1);
  }

  /** slotOf for a kept token, from its stored characters. */
  private slotOfRow(rows: Uint8Array, base: number): number {
    let h = FNV_OFFSET;
    for (let i = HASHED_FROM; i < HASHED_TO; i++) h = Math.imul(h ^ rows[base + TOKEN + i]!, FNV_PRIME);
    return (h >>> 0) & (this.slots - 1);
  }

  private grow(): void {
    const old = this.rows;
    const oldSlots = this.slots;
    this.slots *= 2;
    this.rows = new Uint8Array((this.slots + 1) * ROW_BYTES);
    this.words = new Uint32Array(this.rows.buffer);
    this.nextGeneration();
    for (let from = 0; from < oldSlots; from++) {
      if (old[from * ROW_BYTES] === 0) continue;
      let row = this.slotOfRow(old, from * ROW_BYTES);
      while (this.rows[row * ROW_BYTES] !== 0) row = (row + 1) & (this.slots - 1);
      this.rows.set(old.subarray(from * ROW_BYTES, (from + 1) * ROW_BYTES), row * ROW_BYTES);
    }
  }
}
