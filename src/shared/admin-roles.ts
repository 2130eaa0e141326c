// Operator roles and the one table saying which role each admin route needs. The admin routes
// check it (src/actors/http/admin/routes.ts refuses to register a route without a row, so the
// server does not start with one missing), `npm run docs:roles` writes it into
// docs/operations.md, the console reads it (through GET /admin/whoami) to hide what a token may
// not do, and the role-matrix test walks it. It lives in src/shared because all four use it.
//
// Adding an admin route: add its row here, nothing else. A route nobody gave a row stops the
// server at start with an error naming it.

export const ROLES = ['read', 'publish', 'operate', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** What each role may do, in words (the docs' table). */
export const ROLE_MEANING: Readonly<Record<Role, string>> = {
  read: 'every `GET` under `/admin` but `/admin/tokens`',
  publish: 'read, plus uploads, publishing and reloading tracks',
  operate: 'read, plus rollout control, device enrollment decisions, tags and groups, and retention sweeps',
  admin: 'everything, tokens included (the configured `admin.token` is this role)',
};

export type AdminMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface RouteRole {
  readonly method: AdminMethod;
  /** The route's path as registered (`:name` marks a path segment). */
  readonly path: string;
  /** The role it needs: `read` lets every role in; `publish` and `operate` let that role and `admin` in; `admin` only admin. */
  readonly role: Role;
}

export const ADMIN_ROUTE_ROLES: readonly RouteRole[] = [
  { method: 'GET', path: '/admin/artifacts', role: 'read' },
  { method: 'POST', path: '/admin/artifacts', role: 'publish' },
  { method: 'PUT', path: '/admin/binaries', role: 'publish' },
  { method: 'DELETE', path: '/admin/artifacts', role: 'admin' },
  { method: 'POST', path: '/admin/default', role: 'admin' },
  { method: 'POST', path: '/admin/reload', role: 'publish' },
  { method: 'POST', path: '/admin/rollout', role: 'operate' },
  { method: 'POST', path: '/admin/gc', role: 'operate' },
  { method: 'POST', path: '/admin/memory', role: 'admin' },
  { method: 'POST', path: '/admin/loglevel', role: 'admin' },
  { method: 'GET', path: '/admin/devices', role: 'read' },
  { method: 'GET', path: '/admin/devices/:id', role: 'read' },
  { method: 'GET', path: '/admin/reports', role: 'read' },
  { method: 'GET', path: '/admin/fleet', role: 'read' },
  { method: 'GET', path: '/admin/whoami', role: 'read' },
  { method: 'GET', path: '/admin/audit', role: 'read' },
  { method: 'GET', path: '/admin/webhooks', role: 'read' },
  { method: 'GET', path: '/admin/tokens', role: 'admin' },
  { method: 'POST', path: '/admin/tokens', role: 'admin' },
  { method: 'DELETE', path: '/admin/tokens/:id', role: 'admin' },
  { method: 'POST', path: '/admin/devices/:id/accept', role: 'operate' },
  { method: 'POST', path: '/admin/devices/:id/reject', role: 'operate' },
  { method: 'POST', path: '/admin/devices/preauthorize', role: 'operate' },
  { method: 'POST', path: '/admin/devices/reject', role: 'operate' },
  { method: 'POST', path: '/admin/devices/delete', role: 'operate' },
  { method: 'DELETE', path: '/admin/devices/:id', role: 'operate' },
  { method: 'PUT', path: '/admin/devices/:id/tags', role: 'operate' },
  { method: 'POST', path: '/admin/tags', role: 'operate' },
  { method: 'GET', path: '/admin/groups', role: 'read' },
  { method: 'GET', path: '/admin/groups/:name', role: 'read' },
  { method: 'PUT', path: '/admin/groups/:name', role: 'operate' },
  { method: 'DELETE', path: '/admin/groups/:name', role: 'operate' },
];

/** Whether a token of `role` may call a route that needs `needed`. */
export function roleAllows(role: Role, needed: Role): boolean {
  return needed === 'read' || role === 'admin' || role === needed;
}

/** The row of a registered route, or undefined when it has none. */
export function routeRole(method: AdminMethod, path: string): RouteRole | undefined {
  return ADMIN_ROUTE_ROLES.find((r) => r.method === method && r.path === path);
}

/** The routes a role may call, as `METHOD path` (what GET /admin/whoami lists). */
export function routesOf(role: Role): string[] {
  return ADMIN_ROUTE_ROLES.filter((r) => roleAllows(role, r.role)).map((r) => `${r.method} ${r.path}`);
}

/** The Markdown table of docs/operations.md: one line per route, a column per role. */
export function roleDocTable(): string {
  const lines = [`| call | needs | ${ROLES.join(' | ')} |`, `|---|---|${ROLES.map(() => '---').join('|')}|`];
  for (const r of ADMIN_ROUTE_ROLES) {
    lines.push(`| \`${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}\` | \`${r.role}\` | ${ROLES.map((role) => (roleAllows(role, r.role) ? 'yes' : '403')).join(' | ')} |`);
  }
  return lines.join('\n');
}
