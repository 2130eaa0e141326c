// comlink ships its ESM build as .mjs with .d.ts typings beside it, which NodeNext
// resolution does not pair up; these re-exports give the .mjs entry points their types.
declare module 'comlink/dist/esm/comlink.mjs' {
  export * from 'comlink';
}
declare module 'comlink/dist/esm/node-adapter.mjs' {
  import type { Endpoint } from 'comlink';
  export default function nodeEndpoint(nep: unknown): Endpoint;
}

// bsdiff-node ships no typings. Its promise forms resolve when the native job completes.
declare module 'bsdiff-node' {
  const bsdiff: {
    diff(oldFile: string, newFile: string, patchFile: string, progress?: (percent: number, err?: unknown) => void): Promise<void>;
    patch(oldFile: string, newFile: string, patchFile: string, progress?: (percent: number, err?: unknown) => void): Promise<void>;
    diffSync(oldFile: string, newFile: string, patchFile: string): void;
    patchSync(oldFile: string, newFile: string, patchFile: string): void;
  };
  export default bsdiff;
}
