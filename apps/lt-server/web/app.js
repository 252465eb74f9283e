// The page of lt-server: a microphone streamed to /asr in Vosk's protocol,
// its settled and tentative words and phones shown as they come, and digits
// drawn subpixel by subpixel from /images/stream. No library, no build step.
'use strict';

const $ = (id) => document.getElementById(id);
const keyInput = $('key');
keyInput.value = new URLSearchParams(location.search).get('api_key') || '';

// A WebSocket to this server; the key, if any, rides as a subprotocol
// (browsers cannot set an Authorization header on a WebSocket).
function openSocket(path) {
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + path;
  const key = keyInput.value.trim();
  return key ? new WebSocket(url, ['lt', 'lt-key.' + key]) : new WebSocket(url);
}

function tokensText(tokens, field) {
  return tokens.map((t) => t[field]).join(' ');
}

// ---- speech ----

// What the page heard, for whoever reads it (the browser test does). With
// ?keep_audio=1 in the page's address it also keeps the audio it sent
// (sent: Int16Array pieces), so that the server's answers can be checked
// against the same samples.
window.ltSpeech = { results: [], words: [], phones: [], samplesSent: 0, sampleRate: 0, done: false, error: '', sent: [] };
const keepAudio = new URLSearchParams(location.search).get('keep_audio') === '1';

const speech = {
  socket: null, context: null, source: null, node: null, stream: null, stopping: false,
};

function showPartial(msg) {
  $('settled').textContent = msg.settled !== undefined ? msg.settled : msg.partial;
  $('tentative').textContent = msg.tentative || '';
  $('tentative-phones').textContent = tokensText(msg.tentative_phones || [], 'phone');
}

function addPhones(msg) {
  if (!msg.phones || msg.phones.length === 0) return;
  window.ltSpeech.phones.push(...msg.phones);
  const shown = $('phones');
  shown.textContent = (shown.textContent + ' ' + tokensText(msg.phones, 'phone')).trim().split(' ').slice(-60).join(' ');
}

function onSpeechMessage(event) {
  const msg = JSON.parse(event.data);
  if (msg.error) {
    window.ltSpeech.error = msg.error;
    $('asr-status').textContent = 'error: ' + msg.error;
    return;
  }
  addPhones(msg);
  if (msg.partial !== undefined) {
    showPartial(msg);
    return;
  }
  // A result: an utterance's words (or the final one at the end).
  window.ltSpeech.results.push(msg);
  window.ltSpeech.words.push(...(msg.result || []));
  if (msg.text) {
    const p = document.createElement('p');
    p.textContent = msg.text;
    $('results').appendChild(p);
  }
  $('settled').textContent = '';
  $('tentative').textContent = '';
  $('tentative-phones').textContent = '';
}

async function startMicrophone() {
  const button = $('mic');
  button.disabled = true;
  try {
    speech.stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
    });
    // At the microphone's own rate: no resampling in the browser (the
    // server resamples to 16 kHz), and Firefox wants the two to agree.
    const rate = speech.stream.getAudioTracks()[0].getSettings().sampleRate;
    speech.context = rate ? new AudioContext({ sampleRate: rate }) : new AudioContext();
    await speech.context.audioWorklet.addModule('pcm-worklet.js');
    speech.source = speech.context.createMediaStreamSource(speech.stream);
    speech.node = new AudioWorkletNode(speech.context, 'pcm-capture');
  } catch (e) {
    $('asr-status').textContent = 'no microphone: ' + e.message;
    button.disabled = false;
    return;
  }
  const rate = speech.context.sampleRate;
  Object.assign(window.ltSpeech, { results: [], words: [], phones: [], samplesSent: 0, sampleRate: rate, done: false, error: '',
                                  sent: [] });
  $('results').textContent = '';
  $('phones').textContent = '';
  speech.stopping = false;
  const socket = openSocket('/asr');
  speech.socket = socket;
  socket.binaryType = 'arraybuffer';
  socket.onmessage = onSpeechMessage;
  socket.onclose = (e) => {
    window.ltSpeech.done = true;
    if (!window.ltSpeech.error)
      $('asr-status').textContent = e.code === 1000 ? 'done' : 'closed (' + e.code + (e.reason ? ': ' + e.reason : '') + ')';
    releaseMicrophone();
    button.textContent = 'Start the microphone';
    button.classList.remove('on');
    button.disabled = false;
  };
  // Listening starts now; what is heard while the socket opens is kept and
  // sent first, so that no word said at once is lost.
  const early = [];
  speech.node.port.onmessage = (e) => early.push(e.data);
  speech.source.connect(speech.node);
  socket.onopen = () => {
    socket.send(JSON.stringify({ config: { sample_rate: rate, words: true } }));
    early.forEach(sendSamples);
    speech.node.port.onmessage = (e) => sendSamples(e.data);
    $('asr-status').textContent = 'listening at ' + rate + ' Hz';
    button.textContent = 'Stop';
    button.classList.add('on');
    button.disabled = false;
  };
}

// 16-bit little-endian PCM, as Vosk's protocol sends it.
function sendSamples(samples) {
  const socket = speech.socket;
  if (!socket || socket.readyState !== WebSocket.OPEN || samples.length === 0) return;
  const pcm = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    pcm[i] = Math.max(-32768, Math.min(32767, Math.round(samples[i] * 32768)));
  }
  socket.send(pcm.buffer);
  if (keepAudio) window.ltSpeech.sent.push(pcm);
  window.ltSpeech.samplesSent += samples.length;
  $('asr-status').textContent = 'listening: ' + (window.ltSpeech.samplesSent / window.ltSpeech.sampleRate).toFixed(1) + ' s sent';
}

function releaseMicrophone() {
  if (speech.source) speech.source.disconnect();
  if (speech.stream) speech.stream.getTracks().forEach((t) => t.stop());
  if (speech.context) speech.context.close();
  speech.source = speech.node = speech.stream = speech.context = null;
}

function stopMicrophone() {
  if (speech.stopping) return;
  speech.stopping = true;
  $('mic').disabled = true;
  $('asr-status').textContent = 'finishing';
  // The last samples, then the end: the server answers with the final result and closes.
  speech.source.disconnect();
  speech.node.port.onmessage = (e) => {
    if (!e.data.last) return sendSamples(e.data);
    sendSamples(e.data.last);
    if (speech.socket.readyState === WebSocket.OPEN) speech.socket.send(JSON.stringify({ eof: 1 }));
  };
  speech.node.port.postMessage('flush');
}

$('mic').addEventListener('click', () => {
  if (speech.socket && speech.socket.readyState === WebSocket.OPEN) stopMicrophone();
  else startMicrophone();
});

// ---- digits ----

window.ltDigits = { seed: null, done: false, error: '', images: [] };

const scale = 6;

function drawDigits() {
  const button = $('draw');
  button.disabled = true;
  const request = { count: Math.max(1, Math.min(16, Number($('count').value) || 1)) };
  if ($('seed').value !== '') request.seed = Number($('seed').value);
  Object.assign(window.ltDigits, { seed: null, done: false, error: '', images: [] });
  const holder = $('canvases');
  holder.textContent = '';
  let geometry = null;
  const frames = [];  // per image: the visible canvas and its pixels at 1x
  const socket = openSocket('/images/stream');
  socket.onmessage = (event) => {
    const msg = JSON.parse(event.data);
    if (msg.error) {
      window.ltDigits.error = msg.error;
      $('image-status').textContent = 'error: ' + msg.error;
      return;
    }
    if (msg.height) {  // the start: the images' size and seed
      geometry = msg;
      window.ltDigits.seed = msg.seed;
      for (let i = 0; i < msg.count; i++) {
        const figure = document.createElement('figure');
        const canvas = document.createElement('canvas');
        canvas.width = msg.width * scale;
        canvas.height = msg.height * scale;
        canvas.className = 'digit';
        const caption = document.createElement('figcaption');
        caption.textContent = 'seed ' + (msg.seed + i);
        figure.append(canvas, caption);
        holder.appendChild(figure);
        frames.push({ canvas, pixels: new ImageData(msg.width, msg.height) });
      }
      $('image-status').textContent = 'drawing';
      return;
    }
    if (msg.decided) {
      for (const run of msg.decided) paint(frames[run.image], geometry, run.subpixel, run.values);
      return;
    }
    if (msg.done) {
      window.ltDigits.images = msg.data;
      window.ltDigits.done = true;
      $('image-status').textContent = 'done, seed ' + geometry.seed;
    }
  };
  socket.onopen = () => socket.send(JSON.stringify(request));
  socket.onclose = () => { button.disabled = false; };
}

// Subpixels first, first + 1, ... of one image (raster order, channels
// interleaved); a pixel shows once its first subpixel is decided.
function paint(frame, g, first, values) {
  const px = frame.pixels.data;
  const touched = new Set();
  for (let k = 0; k < values.length; k++) {
    const t = first + k;
    const p = Math.floor(t / g.channels), c = t % g.channels;
    if (g.channels === 1) {
      px[4 * p] = px[4 * p + 1] = px[4 * p + 2] = values[k];
    } else {
      px[4 * p + c] = values[k];
    }
    px[4 * p + 3] = 255;
    touched.add(p);
  }
  const ctx = frame.canvas.getContext('2d');
  for (const p of touched) {
    const x = p % g.width, y = Math.floor(p / g.width);
    ctx.fillStyle = 'rgb(' + px[4 * p] + ',' + px[4 * p + 1] + ',' + px[4 * p + 2] + ')';
    ctx.fillRect(x * scale, y * scale, scale, scale);
  }
}

$('draw').addEventListener('click', drawDigits);
