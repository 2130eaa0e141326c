import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import t from 'tap';
import { chooseEncoding, CONSOLE_DIR, loadConsoleAssets } from '../../../../src/actors/http/admin/console.js';
import { adminCall } from '../../../helpers/admin.js';
import { firmware, makeFixture } from '../../../helpers/fixture.js';
import { startTestServer } from '../../../helpers/server.js';

// The console's files as the HTTP front-end serves them: from memory, content-hashed, cached
// for a year (the page itself revalidated), compressed, and under a policy that lets the page
// load nothing from anywhere but this server.

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A raw request (fetch would decompress and hide Content-Encoding). */
function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('the console is served from memory with cache headers and a strict CSP', async (t) => {
  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const app = await fixture.writeBinary('app.bin', firmware(10_000, 'console-app'));
  const server = await startTestServer(fixture, [{ name: 'app', version: '1.0.0', binary: app.path }]);
  t.teardown(() => server.stop());

  const page = await get(`${server.url}/console/`);
  t.equal(page.status, 200);
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8');
  t.equal(page.headers['cache-control'], 'no-cache', 'the page is revalidated, so a new build is picked up');
  const csp = String(page.headers['content-security-policy']);
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'(;|$)/, 'only this server\'s scripts, no inline script');
  t.match(csp, /connect-src 'self'/);
  t.match(csp, /frame-ancestors 'none'/);
  t.notMatch(csp, /unsafe/, 'no unsafe-inline or unsafe-eval anywhere');
  t.equal(page.headers['x-content-type-options'], 'nosniff');
  t.equal(page.headers['referrer-policy'], 'no-referrer');
  const html = page.body.toString();
  t.notMatch(html, /(src|href)="(https?:)?\/\//, 'nothing is loaded from another origin');

  const assets = [...html.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map((m) => m[1]!);
  t.equal(assets.length, 2, 'one script and one stylesheet');
  for (const path of assets) {
    t.match(path, /^assets\/main-[A-Z0-9]{8}\.(js|css)$/, 'the name carries a content hash');
    const plain = await get(`${server.url}/console/${path}`);
    t.equal(plain.status, 200, path);
    t.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable', `${path} is cached for a year`);
    t.match(String(plain.headers['content-type']), path.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
    t.notOk(plain.headers['content-encoding'], 'no encoding unless asked');
    t.notMatch(plain.body.toString(), /\bhttps?:\/\/(?!www\.w3\.org)[a-z0-9.-]+\.[a-z]{2,}\/[^\s"')]*\.(js|css|woff2?)/i, 'no script, style or font URL of another origin in the bundle');

    const br = await get(`${server.url}/console/${path}`, { 'accept-encoding': 'gzip, deflate, br' });
    t.equal(br.headers['content-encoding'], 'br');
    t.equal(br.headers.vary, 'Accept-Encoding');
    t.ok(brotliDecompressSync(br.body).equals(plain.body), 'brotli decodes to the same bytes');
    t.ok(br.body.length < plain.body.length, 'and is smaller');
    const gz = await get(`${server.url}/console/${path}`, { 'accept-encoding': 'gzip' });
    t.equal(gz.headers['content-encoding'], 'gzip');
    t.ok(gunzipSync(gz.body).equals(plain.body), 'gzip decodes to the same bytes');

    const again = await get(`${server.url}/console/${path}`, { 'if-none-match': String(plain.headers.etag) });
    t.equal(again.status, 304, 'a cached copy is confirmed without a body');
    t.equal(again.body.length, 0);
    const head = await get(`${server.url}/console/${path}`, {}, 'HEAD');
    t.equal(head.status, 200);
    t.equal(head.headers['content-length'], String(plain.body.length), 'HEAD announces the length of GET');
    t.equal(head.body.length, 0);
  }

  const bare = await get(`${server.url}/console`);
  t.equal(bare.status, 301);
  t.equal(bare.headers.location, '/console/');
  const missing = await get(`${server.url}/console/assets/main-AAAAAAAA.js`);
  t.equal(missing.status, 404);
  t.equal(JSON.parse(missing.body.toString()).error.code, 'NOT_FOUND');
  const post = await get(`${server.url}/console/`, {}, 'POST');
  t.equal(post.status, 405);
  t.equal(post.headers.allow, 'GET, HEAD');

  const anonymous = await adminCall(server.url, 'GET', '/admin/artifacts', undefined, null);
  t.ok([401, 429].includes(anonymous.status), 'the page is public, the data behind it is not');
});

t.test('Accept-Encoding picks brotli, then gzip, and honours q=0', async (t) => {
  t.equal(chooseEncoding('gzip, deflate, br'), 'br');
  t.equal(chooseEncoding('gzip'), 'gzip');
  t.equal(chooseEncoding('br;q=0, gzip;q=0.5'), 'gzip');
  t.equal(chooseEncoding('*'), 'br');
  t.equal(chooseEncoding('identity'), 'identity');
  t.equal(chooseEncoding(''), 'identity');
  t.equal(chooseEncoding('*;q=0, identity'), 'identity');
});

t.test('the encodings the build wrote are used when they match their file, made again when not', async (t) => {
  const built = await loadConsoleAssets();
  const page = built.get('/console/')!;
  t.ok(page, 'npm run build wrote the console');
  t.ok(page.encodings.br.equals(await readFile(join(CONSOLE_DIR, 'index.html.br'))), 'the page\'s brotli is the build\'s file');
  t.ok(page.encodings.gzip.equals(await readFile(join(CONSOLE_DIR, 'index.html.gz'))), 'and its gzip');

  const fixture = await makeFixture();
  t.teardown(() => fixture.cleanup());
  const dir = join(fixture.dir, 'console');
  await mkdir(join(dir, 'assets'), { recursive: true });
  const html = Buffer.from('<!doctype html><title>new page</title>');
  await writeFile(join(dir, 'index.html'), html);
  // Left from an earlier build: valid encodings, of other bytes.
  await writeFile(join(dir, 'index.html.br'), brotliCompressSync(Buffer.from('<!doctype html><title>old page</title>')));
  await writeFile(join(dir, 'index.html.gz'), gzipSync(Buffer.from('<!doctype html><title>old page</title>')));
  const css = Buffer.from('body { color: black }');
  await writeFile(join(dir, 'assets', 'main-X.css'), css);
  await writeFile(join(dir, 'assets', 'main-X.css.br'), Buffer.from('not brotli at all'));
  const assets = await loadConsoleAssets(dir);
  t.same([...assets.keys()].sort(), ['/console/', '/console/assets/main-X.css'], 'the .br and .gz files are not served themselves');
  for (const [path, body] of [['/console/', html], ['/console/assets/main-X.css', css]] as const) {
    const { encodings } = assets.get(path)!;
    t.ok(brotliDecompressSync(encodings.br).equals(body), `${path}: a stale or damaged brotli is made again from the file`);
    t.ok(gunzipSync(encodings.gzip).equals(body), `${path}: and the gzip`);
  }
});
