import { request } from './api.js';
import type { Role } from '../../src/shared/admin-roles.js';

// Who the console is signed in as: GET /admin/whoami names the token, its role and the admin
// calls that role may make (the server's route table). Views ask `can(method, path)` before
// they show a control, so a read token sees no button that the server would answer with 403.

export interface Identity {
  token_id: string;
  token_name: string;
  role: Role;
  expires_at: number | null;
  /** `METHOD path` of each call the role may make (`:id` marks a path segment). */
  routes: string[];
}

let current: Identity | undefined;

/** Asks the server who `token` (default: the stored one) is, and remembers it. */
export async function loadIdentity(token?: string): Promise<Identity> {
  current = await request<Identity>('GET', '/admin/whoami', undefined, token);
  return current;
}

export function identity(): Identity | undefined {
  return current;
}

export function forgetIdentity(): void {
  current = undefined;
}

/** Whether the signed-in token may make this call; false before the identity is known. */
export function can(method: string, path: string): boolean {
  return current?.routes.includes(`${method} ${path}`) ?? false;
}
