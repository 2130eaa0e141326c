import type { HeartbeatRecord, PackedHeartbeats } from './fleet.js';
import type { Heartbeat } from '../shared/wire/validate.js';

// The fleet batch's heartbeat codec, both ends side by side: a front-end packs heartbeats as
// they come (PackedHeartbeats: each distinct text once, device ids aside, and typed arrays of
// references and numbers, no object per heartbeat), the fleet actor unpacks them. At tens of
// thousands a second, an object each to clone, and the same version hash and track key copied
// and decoded again in every record, cost the two threads more than the database write itself.

/** Strings per packed heartbeat: device id, version hash, version, artifact, hw arch, hw os. */
const STRINGS = 6;
/** Float64 values per packed heartbeat: free_ram, free_disk, receivedAtMs, transport. */
const NUMBERS = 4;
const TRANSPORTS = ['http', 'coap'] as const;


/** Heartbeats packed one after another, up to `capacity`. */
export class HeartbeatPacker {
  private strings: string[] = [];
  private index = new Map<string, number>();
  /** Per string slot, the last text and its place: a batch's heartbeats mostly repeat their neighbour's texts. */
  private readonly lastText: (string | undefined)[] = new Array<string | undefined>(STRINGS).fill(undefined);
  private readonly lastRef = new Uint32Array(STRINGS);
  private readonly refs: Uint32Array;
  private readonly numbers: Float64Array;
  count = 0;

  constructor(readonly capacity: number) {
    this.refs = new Uint32Array(capacity * STRINGS);
    this.numbers = new Float64Array(capacity * NUMBERS);
  }

  /** Packs a validated heartbeat; false when full. */
  add(heartbeat: Heartbeat, transport: 'http' | 'coap', receivedAtMs: number): boolean {
    if (this.count >= this.capacity) return false;
    const s = this.count * STRINGS;
    // A device id is new to the batch nearly always: stored without the lookup (a repeat costs a few bytes).
    this.refs[s] = this.strings.push(heartbeat.deviceId) - 1;
    this.refs[s + 1] = this.ref(1, heartbeat.versionHash);
    this.refs[s + 2] = this.ref(2, heartbeat.version);
    this.refs[s + 3] = this.ref(3, heartbeat.artifact);
    this.refs[s + 4] = this.ref(4, heartbeat.hwArch);
    this.refs[s + 5] = this.ref(5, heartbeat.hwOs);
    const n = this.count++ * NUMBERS;
    this.numbers[n] = heartbeat.hwFreeRam;
    this.numbers[n + 1] = heartbeat.hwFreeDisk;
    this.numbers[n + 2] = receivedAtMs;
    this.numbers[n + 3] = transport === 'http' ? 0 : 1;
    return true;
  }

  /** What was packed (copies, ready to post); the packer is empty afterwards. */
  take(): PackedHeartbeats {
    const packed = { count: this.count, strings: this.strings, refs: this.refs.slice(0, this.count * STRINGS), numbers: this.numbers.slice(0, this.count * NUMBERS) };
    this.strings = [];
    this.index = new Map();
    this.lastText.fill(undefined);
    this.count = 0;
    return packed;
  }

  /** The place in `strings` of slot `slot`'s text: each distinct text of the batch travels once. */
  private ref(slot: number, text: string): number {
    if (text === this.lastText[slot]) return this.lastRef[slot]!;
    let at = this.index.get(text);
    if (at === undefined) {
      at = this.strings.push(text) - 1;
      this.index.set(text, at);
    }
    this.lastText[slot] = text;
    this.lastRef[slot] = at;
    return at;
  }
}

/** The fleet actor's side: each packed heartbeat as a record, in order; equal texts are one string. */
export function unpackHeartbeats(packed: PackedHeartbeats, visit: (record: HeartbeatRecord) => void): void {
  const { strings, refs, numbers } = packed;
  for (let i = 0; i < packed.count; i++) {
    const s = i * STRINGS;
    const n = i * NUMBERS;
    visit({
      deviceId: strings[refs[s]!]!, versionHash: strings[refs[s + 1]!]!, version: strings[refs[s + 2]!]!,
      artifact: strings[refs[s + 3]!]!, hwArch: strings[refs[s + 4]!]!, hwOs: strings[refs[s + 5]!]!,
      hwFreeRam: numbers[n]!, hwFreeDisk: numbers[n + 1]!, receivedAtMs: numbers[n + 2]!, transport: TRANSPORTS[numbers[n + 3]!]!,
    });
  }
}
