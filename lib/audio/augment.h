// Waveform augmentations for speech training: what a real recording adds to
// clean speech (a talker's rate, a room, noise, a telephone channel, a codec).
// Every function works on 16 kHz mono float samples and is a pure function of
// its inputs; the random ones take a key, so that training can draw them from
// (seed, step, row) and a resumed run redraws what the straight one drew.
//
//   std::vector<float> y = lt::audio::change_speed(x, 1.1);            // 10% faster, pitch up too
//   y = lt::audio::reverberate(y, lt::audio::room_impulse_response(0.4, 6, key));
//   lt::audio::add_noise(y, lt::audio::coloured_noise(y.size(), 1, key), 15);  // pink noise at 15 dB SNR
//   y = lt::audio::codec_round_trip(lt::audio::telephone_band(y), lt::audio::Codec::gsm);
#pragma once
#include <cstdint>
#include <vector>

namespace lt::audio {

// Played faster by `factor` (0.5..2): resampled from 16 kHz x factor to 16
// kHz through libsoxr, so tempo and pitch scale together and the length by
// 1 / factor (the "speed perturbation" of Ko et al., 2015).
std::vector<float> change_speed(const std::vector<float>& x, double factor);

// A room's impulse response at 16 kHz: a direct path of 1, then from the
// second sample Gaussian noise under an envelope that falls 60 dB in rt60
// seconds (0.05..3), its energy `direct_to_reverberant_db` below the direct
// path's; rt60 seconds long, drawn from key.
std::vector<float> room_impulse_response(double rt60, double direct_to_reverberant_db, uint64_t key);
// x convolved with h (through FFTW), cut to x's length and scaled back to x's
// RMS: the same level, heard in the room.
std::vector<float> reverberate(const std::vector<float>& x, const std::vector<float>& h);

// n samples of Gaussian noise whose power falls as 1 / f^exponent (0 white,
// 1 pink, 2 brown; 0..3) from 20 Hz up, with unit RMS; drawn from key.
std::vector<float> coloured_noise(size_t n, double exponent, uint64_t key);
// Talkers at once, as a crowd: each source at unit RMS, repeated to n samples.
std::vector<float> babble(const std::vector<std::vector<float>>& sources, size_t n);
// Adds noise (repeated or cut to x's length) scaled so that the power of x
// over the noise's is snr_db: 10 log10(sum x^2 / sum n^2) = snr_db.
void add_noise(std::vector<float>& x, const std::vector<float>& noise, double snr_db);

// The telephone band: through 8 kHz and back (libsoxr, nothing past 4 kHz
// survives) and a second-order Butterworth high-pass at 300 Hz.
std::vector<float> telephone_band(const std::vector<float>& x);
// G.711 companding: each sample to its 8-bit mu-law (or A-law) code and back,
// as a digital telephone line carries it.
void mu_law(std::vector<float>& x);
void a_law(std::vector<float>& x);
// Amplified by gain_db, then clipped to +-level: a level set too high.
void gain_and_clip(std::vector<float>& x, double gain_db, double level);

// Encoded and decoded again by libsndfile in memory: GSM 6.10 (13 kbit/s at
// 8 kHz, through the telephone band's resampling), MP3 at its lowest bit rate
// and Opus at 16 kHz and its lowest. The result has x's length, aligned to it.
enum class Codec { gsm, mp3, opus };
std::vector<float> codec_round_trip(const std::vector<float>& x, Codec codec);

}  // namespace lt::audio
