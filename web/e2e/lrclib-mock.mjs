// A stand-in for LRCLIB (https://lrclib.net/docs) so the e2e tests have a track with synced
// lyrics: the corpus ships none. It answers every /api/get with a record echoing the query,
// whose synced lyrics put one line every 2 seconds. Run: node e2e/lrclib-mock.mjs PORT
import http from 'node:http';

const port = Number(process.argv[2] ?? 18124);
const lines = ['First line of the song', 'Second line comes along', 'Third line, halfway through',
  'Fourth line before the end', 'Fifth line <b>not bold</b>', 'Last line'];

function lrc() {
  const stamp = (s) => `[${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}.00]`;
  const out = [];
  for (let i = 0; i < 60; i++) out.push(`${stamp(i * 2)} ${lines[i % lines.length]}`);
  return out.join('\n');
}

http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const p = url.searchParams;
  if (url.pathname === '/api/get') {
    const synced = lrc();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id: 1, trackName: p.get('track_name') ?? '', artistName: p.get('artist_name') ?? '',
      albumName: p.get('album_name'), duration: Number(p.get('duration') ?? 0), instrumental: false,
      plainLyrics: synced.replace(/\[[^\]]*\] ?/g, ''), syncedLyrics: synced,
    }));
    return;
  }
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end('{"code":404,"name":"TrackNotFound"}');
}).listen(port, '127.0.0.1');
