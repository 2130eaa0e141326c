import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generate } from 'coap-packet';
import { encodeHeartbeat } from '../src/shared/wire/cbor.js';

// Load that looks like a fleet: every request is a heartbeat from the next of `devices`
// distinct device ids, in turn, over HTTP (a wrk Lua script) and CoAP (a datagram template
// whose id digits are rewritten per request). A real fleet never sends one device's heartbeat
// thousands of times a second, and a cache keyed by device must not flatter a figure. Also
// the readings of the server's /metrics text that say whether the inventory kept up.

/** Digits of the running number in `bench-NNNNNN`: every id has the same length. */
export const ID_DIGITS = 6;
export const ID_PREFIX = 'bench-';

/** The id of device `n` (0-based). */
export function deviceId(n: number): string {
  return ID_PREFIX + String(n).padStart(ID_DIGITS, '0');
}

export interface HeartbeatShape {
  readonly versionHash: string;
  readonly version?: string;
  readonly artifact?: string;
}

/** A heartbeat's fields as the protocol has them (HTTP JSON names). */
export function fleetHeartbeat(id: string, shape: HeartbeatShape): Record<string, unknown> {
  return {
    device_id: id, version_hash: shape.versionHash, version: shape.version ?? '1.0.0',
    hw_info: { arch: 'amd64', os: 'linux', free_ram: 268_435_456, free_disk: 1_073_741_824 },
    timestamp: 1_800_000_000, artifact: shape.artifact ?? 'app',
  };
}

/** A second shape for every `every`-th device (a tenth of the fleet on a rollout's target, say). */
export interface CyclingVariant {
  readonly every: number;
  readonly shape: HeartbeatShape;
}

export interface CyclingOptions {
  /** One device token a line, the fleet's first device first: each request carries its device's. */
  readonly tokensFile?: string;
  /** The device (0-based within the fleet) the script starts from. */
  readonly first?: number;
  /** The fleet's ids are `idOffset` … `idOffset + devices - 1`: a fleet of its own beside another's. */
  readonly idOffset?: number;
  readonly variant?: CyclingVariant;
}

/**
 * A wrk script whose every request POSTs a heartbeat from the next of `devices` ids, from
 * device `first` on (a run that goes on where the last one stopped reaches every device, where
 * runs that each started at device 0 would send the low ids again and again). With a
 * `tokensFile` each request also carries its device's `Authorization: Bearer` header, as a
 * fleet does with `devices.auth: on`.
 */
export async function writeCyclingScript(dir: string, name: string, shape: HeartbeatShape, devices: number, options: CyclingOptions = {}): Promise<string> {
  const { tokensFile, first = 0, idOffset: offset = 0, variant } = options;
  if (devices + offset > 10 ** ID_DIGITS) throw new RangeError(`at most ${10 ** ID_DIGITS} device ids`);
  const path = join(dir, `${name}.lua`);
  const [prefix, suffix] = JSON.stringify(fleetHeartbeat('@@', shape)).split('"@@"');
  const [otherPrefix, otherSuffix] = variant ? JSON.stringify(fleetHeartbeat('@@', variant.shape)).split('"@@"') : [prefix, suffix];
  if (`${prefix}${suffix}${otherPrefix}${otherSuffix}`.includes(']==]')) throw new RangeError('the body cannot be embedded in a Lua long string');
  await writeFile(path, [
    'wrk.method = "POST"',
    'local headers = { ["Content-Type"] = "application/json" }',
    `local n = ${Math.floor(first) % devices}`,
    `local prefix = [==[${prefix}"]==]`,
    `local suffix = [==["${suffix}]==]`,
    `local otherPrefix = [==[${otherPrefix}"]==]`,
    `local otherSuffix = [==["${otherSuffix}]==]`,
    ...(tokensFile ? [
      'local tokens = {}',
      `for line in io.lines([==[${tokensFile}]==]) do tokens[#tokens + 1] = line end`,
      `if #tokens < ${devices} then error("the tokens file holds " .. #tokens .. " tokens for ${devices} devices") end`,
    ] : []),
    'request = function()',
    ...(tokensFile ? ['  headers["Authorization"] = "Bearer " .. tokens[n + 1]'] : []),
    `  local id = string.format("${ID_PREFIX}%0${ID_DIGITS}d", n + ${offset})`,
    `  local body = ${variant ? `n % ${variant.every} == 0 and (otherPrefix .. id .. otherSuffix) or ` : ''}(prefix .. id .. suffix)`,
    `  n = (n + 1) % ${devices}`,
    '  return wrk.format(nil, nil, headers, body)',
    'end',
    '',
  ].join('\n'));
  return path;
}

/** A confirmable CoAP heartbeat (CBOR) with a 4-byte token, from device 0. */
export function coapHeartbeatTemplate(shape: HeartbeatShape): Buffer {
  return generate({
    code: 'POST', confirmable: true, messageId: 1, token: Buffer.alloc(4),
    options: [{ name: 'Uri-Path', value: Buffer.from('heartbeat') }, { name: 'Content-Format', value: Buffer.from([60]) }],
    payload: encodeHeartbeat(fleetHeartbeat(deviceId(0), shape)),
  });
}

/** For coapLoad: rewrites the device id of `template`'s datagrams to the n-th of `devices`. */
export function cycleCoapDevices(template: Buffer, devices: number): (datagram: Buffer, n: number) => void {
  const at = template.indexOf(Buffer.from(deviceId(0))) + ID_PREFIX.length;
  if (at < ID_PREFIX.length) throw new RangeError('the template carries no device id to rewrite');
  return (datagram, n) => void datagram.write(String(n % devices).padStart(ID_DIGITS, '0'), at, 'latin1');
}

/** The sum of a metric's samples over all its labels. */
export function sumMetric(text: string, name: string): number {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

/** A histogram's cumulative bucket counts by upper bound, as a /metrics scrape shows them. */
function histogramBuckets(text: string, name: string): Map<number, number> {
  return new Map(text.split('\n').filter((l) => l.startsWith(`${name}_bucket{`)).map((l) => [
    l.includes('le="+Inf"') ? Infinity : Number(/le="([^"]+)"/.exec(l)![1]),
    Number(l.split(' ').pop()),
  ]));
}

/**
 * The upper bound of the bucket that holds the quantile (a conservative reading): of all the
 * observations in scrape `text`, or of those made since scrape `since` when it is given.
 */
export function histogramQuantile(text: string, name: string, quantile: number, since?: string): number {
  const earlier = since === undefined ? new Map<number, number>() : histogramBuckets(since, name);
  const buckets = [...histogramBuckets(text, name)].map(([le, count]) => ({ le, count: count - (earlier.get(le) ?? 0) })).sort((a, b) => a.le - b.le);
  const total = buckets.find((b) => b.le === Infinity)?.count ?? 0;
  if (total === 0) return 0;
  return buckets.find((b) => b.count >= quantile * total)!.le;
}
