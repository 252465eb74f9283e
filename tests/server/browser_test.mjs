// lt-server's page in a real browser (ctest label browser): Debian's
// chromium, headless, driven by puppeteer-core, with a WAV file as its
// microphone (Chromium's fake capture device). The page's words and phones,
// with their times, must be lt-asr --stream --words's on the very samples
// the page sent (it keeps them with ?keep_audio=1), and its words close to
// lt-asr's on the file (at most a third differing: the capture starts at a
// moment of its own, and a sample can be one step off); the
// digits it draws from /images/stream, read back from its canvases, must be
// the PNGs POST /v1/images gives for the same seeds. Screenshots of both parts go to --docs when
// given. Exits 77 (ctest: skipped) without chromium or puppeteer-core
// (PUPPETEER_SKIP_DOWNLOAD=1 npm install --prefix tests/server).
//   node tests/server/browser_test.mjs --bin build/bin [--docs docs]
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const SKIP = 77;
const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => {
  if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1]]);
  return pairs;
}, []));
const bin = path.resolve(args.bin || 'build/bin');
const chromium = args.chromium || '/usr/bin/chromium';

if (!fs.existsSync(chromium)) {
  console.log(`browser_test: skipped: no ${chromium}`);
  process.exit(SKIP);
}
let puppeteer;
try {
  puppeteer = (await import('puppeteer-core')).default;
} catch (e) {
  console.log('browser_test: skipped: puppeteer-core is not installed (PUPPETEER_SKIP_DOWNLOAD=1 npm install --prefix tests/server)');
  process.exit(SKIP);
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lt-browser-'));
const fail = (message) => {
  console.error('browser_test: FAIL: ' + message);
  process.exitCode = 1;
};

// A 16-bit mono WAV: espeak-ng's speech with silence around it, so that
// the moment the page stops listening falls in silence.
function speechWav(text, file) {
  const raw = path.join(work, 'raw.wav');
  execFileSync('espeak-ng', ['-w', raw, text]);
  const b = fs.readFileSync(raw);
  let at = 12, rate = 0, data = null;
  while (at + 8 <= b.length) {
    const id = b.toString('ascii', at, at + 4), size = b.readUInt32LE(at + 4);
    if (id === 'fmt ') rate = b.readUInt32LE(at + 12);
    if (id === 'data') data = b.subarray(at + 8, at + 8 + Math.min(size, b.length - at - 8));
    at += 8 + size + (size & 1);
  }
  // At 44.1 kHz, the rate Chromium's fake capture device runs at with a
  // file (whatever the file's), and so the page's: its samples reach the
  // page as they are in the file. (Twice espeak-ng's rate, by linear
  // interpolation; lt-asr hears the same file.) The page starts listening
  // a moment after the capture starts, so the times of its words are
  // shifted, and only the words are compared.
  const out = 44100, n = Math.floor((data.length / 2 - 1) * out / rate);
  const up = Buffer.alloc(2 * n);
  for (let i = 0; i < n; i++) {
    const x = i * rate / out, j = Math.floor(x), f = x - j;
    up.writeInt16LE(Math.round((1 - f) * data.readInt16LE(2 * j) + f * data.readInt16LE(2 * j + 2)), 2 * i);
  }
  data = up;
  rate = out;
  const before = Buffer.alloc(2 * Math.round(rate * 0.5)), after = Buffer.alloc(2 * Math.round(rate * 2.5));
  const pcm = Buffer.concat([before, data, after]);
  writeWav(file, rate, pcm);
  return { seconds: pcm.length / 2 / rate, speechEnd: (before.length + data.length) / 2 / rate };
}

function startServer() {
  return new Promise((resolve, reject) => {
    const server = spawn(path.join(bin, 'lt-server'), ['--port', '0', '--requests-per-second', '0', '-t', '1'],
                         { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    const timer = setTimeout(() => reject(new Error('lt-server did not start: ' + log)), 60000);
    server.stderr.on('data', (chunk) => {
      log += chunk;
      const m = /listening on (http:\/\/[^\s]+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve({ server, url: m[1] });
      }
    });
    server.on('exit', (code) => reject(new Error(`lt-server exited (${code}): ${log}`)));
  });
}

const wav = path.join(work, 'speech.wav');
const audio = speechWav('the quick brown fox jumps over the lazy dog', wav);
const ltAsr = (file) => JSON.parse(execFileSync(path.join(bin, 'lt-asr'), ['--stream', '--words', '-f', 'json', '-q', file]));
const want = ltAsr(wav).words.map((w) => w.word);

// Word edits (substitutions, insertions, deletions) from a to b.
function edits(a, b) {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next.push(Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1)));
    row = next;
  }
  return row[b.length];
}

// 16-bit mono PCM as a WAV file.
function writeWav(file, rate, pcm) {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + pcm.length, 4); h.write('WAVE', 8); h.write('fmt ', 12);
  h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22); h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(2 * rate, 28); h.writeUInt16LE(2, 32); h.writeUInt16LE(16, 34); h.write('data', 36);
  h.writeUInt32LE(pcm.length, 40);
  fs.writeFileSync(file, Buffer.concat([h, pcm]));
}

const { server, url } = await startServer();
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--use-fake-ui-for-media-stream',
         '--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${wav}%noloop`,
         '--autoplay-policy=no-user-gesture-required'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 900, height: 900 });
  page.on('pageerror', (e) => fail('the page threw: ' + e.message));
  await page.goto(url + '/?keep_audio=1', { waitUntil: 'load' });

  // Speech: listen for the length of the file, then stop; the final result closes the stream.
  await page.click('#mic');
  await page.waitForFunction((s) => window.ltSpeech.sampleRate > 0 && window.ltSpeech.samplesSent >= s * window.ltSpeech.sampleRate,
                             { timeout: 60000, polling: 100 }, audio.seconds);
  await page.click('#mic');
  await page.waitForFunction(() => window.ltSpeech.done, { timeout: 30000, polling: 100 });
  const heard = await page.evaluate(() => {
    const s = window.ltSpeech;
    const bytes = new Uint8Array(s.sent.reduce((n, p) => n + p.byteLength, 0));
    let at = 0;
    for (const p of s.sent) { bytes.set(new Uint8Array(p.buffer), at); at += p.byteLength; }
    let binary = '';
    for (let i = 0; i < bytes.length; i += 8192) binary += String.fromCharCode(...bytes.subarray(i, i + 8192));
    return { words: s.words, phones: s.phones, error: s.error, rate: s.sampleRate, audio: btoa(binary) };
  });
  if (heard.error) fail('the page got an error: ' + heard.error);
  // The samples the page sent, through lt-asr: the page's words and phones exactly, times and all.
  const sent = path.join(work, 'sent.wav');
  writeWav(sent, heard.rate, Buffer.from(heard.audio, 'base64'));
  const exact = ltAsr(sent);
  const key = (t) => `${t.word || t.phone}@${t.start}-${t.end}`;
  const words = heard.words.map((w) => w.word);
  console.log(`browser_test: the page heard "${words.join(' ')}" (${heard.phones.length} phones) in ` +
              `${(Buffer.from(heard.audio, 'base64').length / 2 / heard.rate).toFixed(2)} s sent at ${heard.rate} Hz; ` +
              `lt-asr on the file: "${want.join(' ')}"`);
  if (heard.words.map(key).join(' ') !== exact.words.map(key).join(' '))
    fail(`the page's words differ from lt-asr's on the samples it sent: "${exact.words.map(key).join(' ')}"`);
  if (heard.phones.map(key).join(' ') !== exact.phones.map(key).join(' '))
    fail("the page's phones differ from lt-asr's on the samples it sent");
  // The samples Chromium hands the page are the file's, but from a moment of
  // the capture's own and, here and there, 1/32768 apart: enough to turn
  // JUMPS OVER THE into JUMP SO THE THE now and then.
  const wrong = edits(words, want);
  if (wrong > Math.floor(want.length / 3))
    fail(`${wrong} words differ from lt-asr's on the file (at most a third may, from where the capture began)`);
  if (args.docs) await (await page.$('#speech')).screenshot({ path: path.join(args.docs, 'server-asr.png') });

  // Digits: 4 images from seed 11, drawn live, against POST /v1/images per seed.
  await page.$eval('#count', (e) => { e.value = '4'; });
  await page.$eval('#seed', (e) => { e.value = '11'; });
  await page.click('#draw');
  await page.waitForFunction(() => window.ltDigits.done || window.ltDigits.error, { timeout: 60000, polling: 100 });
  for (let i = 0; i < 4; i++) {
    const response = await fetch(url + '/v1/images', { method: 'POST', body: JSON.stringify({ seed: 11 + i }) });
    if (response.status !== 200) { fail(`POST /v1/images answered ${response.status}`); continue; }
    const png = Buffer.from(await response.arrayBuffer()).toString('base64');
    const diff = await page.evaluate(async (index, b64) => {
      const img = new Image();
      img.src = 'data:image/png;base64,' + b64;
      await img.decode();
      const ref = document.createElement('canvas');
      ref.width = img.width; ref.height = img.height;
      const rc = ref.getContext('2d');
      rc.drawImage(img, 0, 0);
      const want = rc.getImageData(0, 0, img.width, img.height).data;
      const shown = document.querySelectorAll('canvas.digit')[index];
      const s = shown.width / img.width;
      const got = shown.getContext('2d').getImageData(0, 0, shown.width, shown.height).data;
      let differ = 0;
      for (let y = 0; y < img.height; y++)
        for (let x = 0; x < img.width; x++) {
          const g = 4 * ((y * s + s / 2) * shown.width + x * s + s / 2), w = 4 * (y * img.width + x);
          if (got[g] !== want[w] || got[g + 1] !== want[w + 1] || got[g + 2] !== want[w + 2]) differ++;
        }
      return differ;
    }, i, png);
    if (diff !== 0) fail(`digit ${i} (seed ${11 + i}): ${diff} pixels of the canvas differ from POST /v1/images`);
  }
  console.log('browser_test: 4 digits drawn from /images/stream compared with POST /v1/images');
  if (args.docs) await (await page.$('#digits')).screenshot({ path: path.join(args.docs, 'server-images.png') });
} catch (e) {
  fail(e.stack || String(e));
} finally {
  await browser.close();
  server.kill('SIGTERM');
  fs.rmSync(work, { recursive: true, force: true });
}
if (!process.exitCode) console.log('browser_test: passed');
