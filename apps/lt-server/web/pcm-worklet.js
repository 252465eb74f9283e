// The microphone's samples for /asr: mono (channels averaged), at the audio
// context's rate, posted to the page 100 ms at a time; a 'flush' message
// posts what is left as {last: samples}.
class PcmCapture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.chunk = new Float32Array(Math.round(sampleRate / 10));
    this.used = 0;
    this.port.onmessage = (e) => {
      if (e.data === 'flush') {
        this.port.postMessage({ last: this.chunk.slice(0, this.used) });
        this.used = 0;
      }
    };
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true;
    const n = channels[0].length;
    for (let i = 0; i < n; i++) {
      let v = 0;
      for (const c of channels) v += c[i];
      this.chunk[this.used++] = v / channels.length;
      if (this.used === this.chunk.length) {
        this.port.postMessage(this.chunk.slice());
        this.used = 0;
      }
    }
    return true;
  }
}
registerProcessor('pcm-capture', PcmCapture);
