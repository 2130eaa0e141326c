import { createRequire } from 'node:module';

// zstd compression at a chosen level. The JavaScript wrapper of @mongodb-js/zstd 1.2.2
// (`compress(data)`) drops the level, so every file came out at zstd's default level 3
// whatever store.full_compression_level said. Its native binding, which the wrapper loads
// for this platform, takes the level; newer wrappers (7.x) need a toolchain at install time.

interface ZstdBinding {
  compress(data: Buffer, level?: number | null): Promise<Buffer>;
}

const binding = createRequire(import.meta.url)('@mongodb-js/zstd/bindings.js') as ZstdBinding;

/** One zstd frame holding `data`, at `level` (1-22). */
export async function zstdCompress(data: Buffer, level: number): Promise<Buffer> {
  if (!Number.isInteger(level) || level < 1 || level > 22) throw new RangeError(`zstd level must be an integer 1-22, not ${level}`);
  try {
    return await binding.compress(data, level);
  } catch (err) {
    // napi errors carry no JavaScript stack; a new Error gives the log one.
    throw new Error(`zstd: ${(err as Error).message}`, { cause: err });
  }
}
