import type { Principal } from './principal.js';
import type { Exchange } from '../server/respond.js';

// The shape of an admin route, apart from the routes themselves (routes.ts registers
// them with authentication; fleet-routes.ts and others add theirs through an AdminRoute), so a
// file of routes and the file that registers it do not import each other.

/** What a handler gets from the request, read before the first await (uWS reuses it after). */
export interface AdminQuery {
  artifact?: string;
  /** The whole query string, for calls that check every key. */
  raw: string;
  /** The `:param` path segment, for routes that have one. */
  param?: string;
  /** Who is calling: the configured token or an operator token. */
  who: Principal;
  /** What the audit row says on success, set by the handler (never a secret). */
  audit: { detail?: string };
  /** Settles once a change's audit row is committed; rejects when it cannot be (the change must not be made). */
  audited: Promise<unknown>;
  /** PUT only: what an upload needs from its headers ('' when absent). */
  upload?: UploadHeaders;
}

export interface UploadHeaders {
  readonly contentLength: string;
  readonly contentSha256: string;
}

export type AdminHandler = (ex: Exchange, body: Promise<Buffer> | undefined, query: AdminQuery) => Promise<void>;
/** A PUT registered with this `bodyLimit` streams its body itself (an upload); any other PUT has its JSON body read like a POST's. */
export const STREAMED_BODY = -1;
/** `bodyLimit`: bytes a POST or PUT body may have, MAX_ADMIN_BODY_BYTES unless the call needs more (bulk). */
export type AdminRoute = (method: 'get' | 'post' | 'put' | 'del' | 'any', path: string, name: string, handler: AdminHandler, bodyLimit?: number) => void;
