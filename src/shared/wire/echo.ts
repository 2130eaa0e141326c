// The Echo option of RFC 9175, for the CoAP front-end and its clients alike: the server sends
// a value to a source that has not yet proved it receives what is sent to it (docs/coap.md,
// "Amplification"), and a client sends the last value it got back on its requests.

/** RFC 9175 §2.2.1: the option number (elective, safe to forward, not part of the cache key). */
export const ECHO_OPTION = 252;

/** The Echo value among parsed options (coap-packet names an unregistered option by its number). */
export function echoValue(options: readonly { name: string | number; value: unknown }[] | undefined): Buffer | undefined {
  const option = options?.find((o) => String(o.name) === String(ECHO_OPTION));
  return option && Buffer.isBuffer(option.value) && option.value.length > 0 ? option.value : undefined;
}
