import t from 'tap';
import { startUpdateWorld } from '../helpers/agent.js';
import { ADMIN_TOKEN } from '../helpers/fixture.js';
import { heartbeatUntilSigned } from '../helpers/http.js';

// RFC 9110 as a client that is not our agent expects it: HEAD on every GET resource, Allow
// on every 405, a strong ETag (the transfer hash) with If-None-Match and If-Range.

async function request(url: string, init: RequestInit = {}) {
  const response = await fetch(url, init);
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, body };
}

t.test('downloads, health and metrics answer HEAD, conditional requests and 405 with Allow', async (t) => {
  const { server, v1Hash } = await startUpdateWorld(t, 300_000);
  const manifest = await heartbeatUntilSigned(server.url, v1Hash, 'app');
  const url = `${server.url}${manifest.delta_endpoint}`;
  const etag = `"${manifest.delta_hash}"`;

  const whole = await request(url);
  t.equal(whole.status, 200);
  t.equal(whole.headers.get('etag'), etag, 'the strong ETag is the transfer hash');

  const head = await request(url, { method: 'HEAD' });
  t.equal(head.status, 200, 'HEAD on a download');
  t.equal(head.headers.get('content-length'), String(manifest.delta_size), 'with the length a GET would send');
  t.equal(head.headers.get('etag'), etag);
  t.equal(head.body.length, 0, 'and no body');
  const headRange = await request(url, { method: 'HEAD', headers: { Range: 'bytes=0-99' } });
  t.equal(headRange.status, 206);
  t.equal(headRange.headers.get('content-length'), '100');
  t.equal(headRange.headers.get('content-range'), `bytes 0-99/${manifest.delta_size}`);

  for (const path of ['/health', '/metrics']) {
    const answer = await request(`${server.url}${path}`, { method: 'HEAD' });
    t.equal(answer.status, 200, `HEAD ${path}`);
    t.ok(Number(answer.headers.get('content-length')) > 0, `HEAD ${path} states a length`);
    t.equal(answer.body.length, 0);
  }

  const fresh = await request(url, { headers: { 'If-None-Match': etag } });
  t.equal(fresh.status, 304, 'If-None-Match with the current tag is 304');
  t.equal(fresh.headers.get('etag'), etag);
  t.equal(fresh.body.length, 0);
  t.equal((await request(url, { headers: { 'If-None-Match': '"another"' } })).status, 200, 'another tag gets the body');
  t.equal((await request(url, { headers: { 'If-None-Match': '*' } })).status, 304);

  const resumed = await request(url, { headers: { Range: 'bytes=100-', 'If-Range': etag } });
  t.equal(resumed.status, 206, 'If-Range with the current tag honours the range');
  t.same(resumed.body, whole.body.subarray(100));
  const stale = await request(url, { headers: { Range: 'bytes=100-', 'If-Range': '"stale"' } });
  t.equal(stale.status, 200, 'a stale validator gets the whole file');
  t.same(stale.body, whole.body);
  const dated = await request(url, { headers: { Range: 'bytes=100-', 'If-Range': 'Sun, 22 Nov 2026 10:00:00 GMT' } });
  t.equal(dated.status, 200, 'a date validator (no Last-Modified is sent) gets the whole file');

  const expectations: [string, string, string][] = [
    ['PUT', manifest.delta_endpoint!, 'GET, HEAD'],
    ['POST', '/health', 'GET, HEAD'],
    ['DELETE', '/metrics', 'GET, HEAD'],
    ['GET', '/heartbeat', 'POST'],
    ['PUT', '/report', 'POST'],
  ];
  for (const [method, path, allow] of expectations) {
    const answer = await request(`${server.url}${path}`, { method });
    t.equal(answer.status, 405, `${method} ${path} is 405`);
    t.equal(answer.headers.get('allow'), allow, `${method} ${path} names Allow: ${allow}`);
  }
  const admin = await request(`${server.url}/admin/gc`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  t.equal(admin.status, 405);
  t.equal(admin.headers.get('allow'), 'POST', 'admin 405s name Allow too');
});
