/** Rejects with an error whose `code` is `kind` once `ms` pass without an answer. */
export function withTimeout<T>(promise: Promise<T>, ms: number, kind: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error(kind), { code: kind })), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
