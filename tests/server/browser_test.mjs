// lt-server's page in a real browser (ctest label browser): Debian's
// chromium, headless, driven by puppeteer-core, with a WAV file as its
// microphone (Chromium's fake capture device). The page's words must be
// lt-asr --stream --words's on the same file, and the digits it draws from
// /images/stream, read back from its canvases, the PNGs POST /v1/images
// gives for the same seeds. Screenshots of both parts go to --docs when
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
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + pcm.length, 4); h.write('WAVE', 8); h.write('fmt ', 12);
  h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22); h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(2 * rate, 28); h.writeUInt16LE(2, 32); h.writeUInt16LE(16, 34); h.write('data', 36);
  h.writeUInt32LE(pcm.length, 40);
  fs.writeFileSync(file, Buffer.concat([h, pcm]));
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
const reference = JSON.parse(execFileSync(path.join(bin, 'lt-asr'), ['--stream', '--words', '-f', 'json', '-q', wav]));
const want = reference.words.map((w) => w.word).join(' ');

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
  await page.goto(url + '/', { waitUntil: 'load' });

  // Speech: listen for the length of the file, then stop; the final result closes the stream.
  await page.click('#mic');
  await page.waitForFunction((s) => window.ltSpeech.sampleRate > 0 && window.ltSpeech.samplesSent >= s * window.ltSpeech.sampleRate,
                             { timeout: 60000, polling: 100 }, audio.seconds);
  await page.click('#mic');
  await page.waitForFunction(() => window.ltSpeech.done, { timeout: 30000, polling: 100 });
  const heard = await page.evaluate(() => ({ words: window.ltSpeech.words.map((w) => w.word).join(' '),
                                             phones: window.ltSpeech.phones.length, error: window.ltSpeech.error,
                                             rate: window.ltSpeech.sampleRate }));
  console.log(`browser_test: page heard "${heard.words}" (${heard.phones} phones, captured at ${heard.rate} Hz); ` +
              `lt-asr --stream --words: "${want}"`);
  if (heard.error) fail('the page got an error: ' + heard.error);
  if (heard.words !== want) fail(`the page's words differ from lt-asr's`);
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
