// A loopback proxy standing for a slow link to a friend's Subsonic server: everything passes
// through as it is, except audio (`/rest/download`, `/rest/stream`), which is paced to a rate,
// so a download in the e2e tests shows its progress and can be cancelled before it is done.
//   node e2e/slow-link.mjs <listen-port> <target-base-url> [bytes-per-second, default 409600]
import http from 'node:http';

const [listen, target, rate = '409600'] = process.argv.slice(2);
if (!listen || !target) {
  console.error('usage: node slow-link.mjs <listen-port> <target-base-url> [bytes-per-second]');
  process.exit(2);
}
const TICK_MS = 100;
const perTick = Math.max(1, Math.floor((Number(rate) * TICK_MS) / 1000));

http
  .createServer((request, response) => {
    const url = new URL(request.url ?? '/', target);
    const upstream = http.request(url, { method: request.method, headers: { ...request.headers, host: url.host } }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      if (!/^\/rest\/(download|stream)(\.view)?$/.test(url.pathname)) {
        answer.pipe(response);
        return;
      }
      // Audio: each chunk is written a slice per tick; the upstream waits meanwhile.
      answer.on('data', (chunk) => {
        answer.pause();
        let offset = 0;
        const tick = () => {
          if (response.destroyed) return void answer.destroy();
          const part = chunk.subarray(offset, offset + perTick);
          offset += part.length;
          response.write(part);
          if (offset < chunk.length) setTimeout(tick, TICK_MS);
          else answer.resume();
        };
        tick();
      });
      answer.on('end', () => response.end());
    });
    upstream.on('error', () => {
      if (!response.headersSent) response.writeHead(502);
      response.end();
    });
    // The client went away (a cancelled download): stop reading from the server too.
    response.on('close', () => upstream.destroy());
    request.pipe(upstream);
  })
  .listen(Number(listen), '127.0.0.1', () => console.log(`slow link on :${listen} to ${target} at ${rate} B/s`));
