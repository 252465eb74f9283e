/* lt.h: the C API of lt, linear transformers as RNNs (Katharopoulos et al.,
 * "Transformers are RNNs", ICML 2020). Link with -llt (pkg-config lt, or
 * CMake's find_package(lt) and target lt::lt).
 *
 * Speech: a recognizer transcribes recordings and streams to phones and
 * words with their times (below the state API). Training: a recipe of
 * lt-train's options trains, evaluates and exports as lt-train does (last).
 *
 * A model is loaded once; its recurrent state is a value the caller owns:
 * made for a batch of sequences, stepped one position at a time or continued
 * over a chunk, forked, reset, saved and loaded. Every position costs the
 * same, whatever came before (the paper's eq. 18-20).
 *
 *   #include <lt.h>
 *
 *   lt_model* model;
 *   if (lt_model_load("mnist.safetensors", NULL, &model) != LT_OK) {  // cpu, fp32
 *     fprintf(stderr, "%s\n", lt_last_error());
 *     return 1;
 *   }
 *   lt_model_info info;
 *   lt_model_get_info(model, &info);
 *
 *   // One image, subpixel by subpixel, through the state.
 *   lt_state* state;
 *   lt_state_new(model, 1, &state);
 *   float* head = malloc(sizeof(float) * info.head_width);
 *   int32_t pixel = 0;  // the first subpixel (lt_image_sample draws it from the data)
 *   for (int64_t t = 0; t < info.positions; ++t) {
 *     lt_state_step(state, &pixel, head);                 // the distribution of subpixel t + 1
 *     lt_image_draw(model, head, 1, 42, t + 1, &pixel);   // sampled with seed 42
 *   }
 *   lt_state_free(state);
 *   lt_model_free(model);
 *
 * Errors: every function that can fail returns an lt_status, and on failure
 * lt_last_error() holds one line saying what and, where it applies, which
 * file, until the next failing call on the same thread. No exception crosses
 * this API. Pointers given must not be NULL unless said otherwise.
 *
 * Threads: a model and the states made from it may be used by one thread at
 * a time. Different models may run on different threads at once.
 *
 * Lifetime: a state refers to its model, which must outlive it.
 */
#ifndef LT_H
#define LT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LT_API __attribute__((visibility("default")))

typedef enum lt_status {
  LT_OK = 0,
  LT_ERROR = 1,          /* bad input, a file that cannot be read or is malformed, a state that does not
                            fit its model, a device that cannot be used: lt_last_error() says which */
  LT_ERROR_ARGUMENT = 2, /* a NULL pointer or a size out of range */
  LT_ERROR_MEMORY = 3,   /* an allocation failed */
  LT_ERROR_DIVERGED = 4  /* lt_train: the loss became NaN or infinite; the run stopped without updating, its
                            last checkpoint kept (lt_last_error() says at which step) */
} lt_status;

/* The version of this header, the same as lt_version()'s number (CMake's
 * project version: lib/CMakeLists.txt refuses to configure when they differ,
 * and a test compares them with the library's). */
#define LT_VERSION_MAJOR 0
#define LT_VERSION_MINOR 1
#define LT_VERSION_PATCH 0

/* The library's version and commit, e.g. "0.1.0 (f8f481b)". */
LT_API const char* lt_version(void);
/* The calling thread's last failure, one line; "" when none failed yet. */
LT_API const char* lt_last_error(void);

/* ---- models ---- */

typedef struct lt_model lt_model;

typedef struct lt_model_options {
  const char* device;     /* "cpu" or "cuda" */
  const char* precision;  /* "fp32"; "bf16": the recurrent state in bf16 and, on the CPU, bf16 products
                             (AVX512_BF16); "tf32": products on CUDA's tensor cores; "bf16+tf32" (CUDA).
                             The output head stays fp32 (docs/precision.md) */
} lt_model_options;

/* "cpu", "fp32". */
LT_API lt_model_options lt_model_default_options(void);

typedef struct lt_model_info {
  char family[16];       /* "image" or "copy": what the checkpoint's lt.model says */
  int64_t vocabulary;    /* inputs are tokens 0..vocabulary-1 */
  int64_t positions;     /* the longest input: a state holds this many positions */
  int64_t head_width;    /* floats of a position's output (lt_state_step's head) */
  int64_t height, width, channels; /* images: positions + 1 subpixels; 0 for other models */
  int64_t parameters;
  int64_t layers;
  char attention[16];    /* "linear", "causal-linear", "softmax", "lsh-4", ... */
  char device[96];       /* the CPU's or the GPU's name, e.g. "AMD EPYC 9B14" */
  char precision[64];    /* e.g. "products fp32, state bf16, head fp32" */
} lt_model_info;

/* Loads a safetensors checkpoint written by lt-train (or the reference's
 * image models). NULL options: lt_model_default_options(). A precision the
 * device cannot run is LT_ERROR. */
LT_API lt_status lt_model_load(const char* path, const lt_model_options* options, lt_model** model);
LT_API lt_status lt_model_get_info(const lt_model* model, lt_model_info* info);
LT_API void lt_model_free(lt_model* model); /* NULL is ignored */

/* Threads of the CPU backend for the whole process; 0: every core. */
LT_API void lt_set_threads(int threads);

/* The full path of a file lt ships, found as the tools find it when no file
 * is named: a file of weights/ by its name ("mnist.safetensors",
 * "asr.safetensors", "asr-stream.safetensors", "speech-phones.arpa.gz",
 * "speech-words.arpa.gz") from $LT_WEIGHTS when set (the only place then),
 * else <prefix>/share/lt/weights beside this library or the program, the
 * weights/ beside a build folder, then the source tree's lt was built from;
 * or "lexicon": the CMU dictionary (Debian's pocketsphinx-en-us). *path is
 * the caller's, released with lt_string_free. A file not found is LT_ERROR,
 * the line naming every place looked. */
LT_API lt_status lt_find_shipped(const char* name, char** path);

/* ---- recurrent state ---- */

typedef struct lt_state lt_state;

/* A state for `batch` sequences at position 0, S at the model's precision. */
LT_API lt_status lt_state_new(lt_model* model, int64_t batch, lt_state** state);
/* A copy of the state, at the same position, independent from then on. */
LT_API lt_status lt_state_fork(const lt_state* state, lt_state** copy);
/* Back to position 0, as lt_state_new left it. */
LT_API lt_status lt_state_reset(lt_state* state);
/* Positions consumed so far, and the batch. */
LT_API int64_t lt_state_position(const lt_state* state);
LT_API int64_t lt_state_batch(const lt_state* state);
/* Consumes tokens[batch] at the state's position and writes head[batch x
 * head_width]: each sequence's output for its next position. */
LT_API lt_status lt_state_step(lt_state* state, const int32_t* tokens, float* head);
/* Consumes tokens[batch x count] (row-major: each sequence's count tokens)
 * in one parallel pass and writes heads[batch x count x head_width]: the
 * same numbers as count steps, up to float rounding. */
LT_API lt_status lt_state_continue(lt_state* state, const int32_t* tokens, int64_t count, float* heads);
/* Writes the state to a file (safetensors, with its model's architecture,
 * a checksum of its weights and a crc32 of its own bytes), and loads one for
 * the same model: a state of another model is refused, naming the file and
 * what differs, and so is a damaged one (its crc32 does not match) or one
 * without a crc32 (saved before states had one: docs/api.md). */
LT_API lt_status lt_state_save(const lt_state* state, const char* path);
LT_API lt_status lt_state_load(lt_model* model, const char* path, lt_state** state);
/* The same as bytes in memory: *bytes (of *size) is the caller's, released
 * with lt_bytes_free; a state from bytes is refused as a file would be. */
LT_API lt_status lt_state_to_bytes(const lt_state* state, uint8_t** bytes, size_t* size);
LT_API lt_status lt_state_from_bytes(lt_model* model, const uint8_t* bytes, size_t size, lt_state** state);
LT_API void lt_bytes_free(uint8_t* bytes); /* NULL is ignored */
LT_API void lt_state_free(lt_state* state); /* NULL is ignored */

/* ---- images ---- */

/* Draws bytes[rows] from the image model's heads[rows x head_width] for
 * subpixel `position` (1..positions of lt_model_info; others are refused):
 * a pure function of (seed, position, row), the same on every device. */
LT_API lt_status lt_image_draw(lt_model* model, const float* heads, int64_t rows, uint64_t seed, int64_t position,
                               int32_t* bytes);

typedef struct lt_image_options {
  uint64_t seed;   /* batch j draws from seed + j: the same seed and batch give the same images */
  int64_t batch;   /* images sampled together (0: all at once); a last, smaller batch is computed at this
                      size, so that an image does not depend on how many are asked for */
  /* Called once subpixel `subpixel` of images first..first+rows-1 is decided; pixels holds those images'
   * [rows x height x width x channels] bytes so far (later subpixels 0), valid during the call. NULL: none */
  void (*progress)(int64_t first, int64_t rows, int64_t subpixel, const uint8_t* pixels, void* user);
  void* user;
} lt_image_options;

/* seed 0, batch 0, no progress. */
LT_API lt_image_options lt_image_default_options(void);
/* Samples `count` images into pixels[count x height x width x channels]
 * (raster order, RGB interleaved), as lt-sample-image -n count -b batch -s
 * seed does, at the model's precision. bits_per_dim (NULL: not wanted)
 * receives count values: each image's bits per subpixel under the
 * distributions it was drawn from (lt-sample-image's stdout). */
LT_API lt_status lt_image_sample(lt_model* model, int64_t count, const lt_image_options* options, uint8_t* pixels,
                                 double* bits_per_dim);
/* `count` completions of one partly known image into pixels[count x height
 * x width x channels]: values[i] is kept wherever known[i] is nonzero (both
 * height x width x channels), the rest is drawn; the known prefix is read in
 * one parallel pass and its state forked into every completion. As
 * lt-complete -n count -s seed does for its first input (options->batch is
 * not used: the completions are one batch). */
LT_API lt_status lt_image_complete(lt_model* model, const uint8_t* values, const uint8_t* known, int64_t count,
                                   const lt_image_options* options, uint8_t* pixels);

/* ---- images: continuous batching ----
 * An image batch samples and completes many images at once: a request joins
 * the running batch at its next step and leaves it when its last subpixel is
 * drawn, so nobody waits for the batch to drain. Its rows live in one pool of
 * recurrent states. Each image is the one lt_image_sample (count 1, batch 1,
 * the request's seed) or lt_image_complete (count 1) gives, byte for byte,
 * whatever else shares its steps (on a GPU, whose products may round a row
 * differently at another batch size, unless a draw falls within that
 * rounding of a tie). A batch and its jobs are used by one
 * thread at a time. Free a batch's jobs before the batch. */
typedef struct lt_image_batch lt_image_batch;
typedef struct lt_image_job lt_image_job;

LT_API lt_status lt_image_batch_new(lt_model* model, lt_image_batch** batch);
/* An image drawn from seed; with values and known (both height x width x
 * channels, or both NULL) a completion keeping values[i] wherever known[i] is
 * nonzero, its known prefix read in one parallel pass when it joins. */
LT_API lt_status lt_image_batch_add(lt_image_batch* batch, uint64_t seed, const uint8_t* values,
                                    const uint8_t* known, lt_image_job** job);
/* Decides the next subpixel of every unfinished job (one batched step);
 * *running (NULL: not wanted) receives the jobs still unfinished after it. */
LT_API lt_status lt_image_batch_step(lt_image_batch* batch, int64_t* running);
/* Subpixels decided so far (height x width x channels when done), and the
 * job's bytes [height x width x channels] so far (later ones 0), valid while
 * the job lives. */
LT_API int64_t lt_image_job_decided(const lt_image_job* job);
LT_API const uint8_t* lt_image_job_pixels(const lt_image_job* job);
LT_API int lt_image_job_done(const lt_image_job* job);
LT_API void lt_image_job_free(lt_image_job* job);     /* leaves its batch; NULL is ignored */
LT_API void lt_image_batch_free(lt_image_batch* batch); /* NULL is ignored */

/* Reads a PNG file into *pixels [height x width x channels] bytes (raster
 * order, channels interleaved as stored: 1 grey, 2 grey + alpha, 3 RGB, 4
 * RGBA; 16-bit files reduced to 8 bits), which the caller releases with
 * lt_bytes_free. A file that is not a PNG, is truncated, or declares more
 * pixels than its compressed data can hold is LT_ERROR, refused before any
 * memory is set aside for its pixels. */
LT_API lt_status lt_png_read(const char* path, uint8_t** pixels, int64_t* height, int64_t* width, int64_t* channels);
/* Writes pixels [height x width x channels] (1 grey, 2 grey + alpha, 3 RGB, 4
 * RGBA; a row under 2 GiB) as a PNG file, as the tools write theirs: through a
 * temporary file renamed over path, so a reader never sees a partial image
 * and a failed write (a full disk, a missing folder) leaves path as it was,
 * in one line naming it. */
LT_API lt_status lt_png_write(const char* path, const uint8_t* pixels, int64_t height, int64_t width, int64_t channels);

/* ---- speech: phones and words with times ---- */

typedef struct lt_recognizer lt_recognizer;
typedef struct lt_transcript lt_transcript;
typedef struct lt_stream lt_stream;

typedef struct lt_recognizer_options {
  const char* device;    /* "cpu" or "cuda" */
  int beam;              /* CTC prefix beam over phones; 1: greedy */
  const char* phone_lm;  /* an ARPA phone n-gram (.arpa or .arpa.gz) the beam search adds, or NULL */
  const char* lexicon;   /* CMU-dictionary pronunciations: decode words too; NULL: phones only */
  const char* word_lm;   /* an ARPA word n-gram for the word search, or NULL */
  double max_delay;      /* seconds a search may hold a phone or word back before it settles: whole positions
                            (30 ms for the shipped models), as many as fit with the 15 ms a position's audio
                            reaches past its end, so that each is out at most this long after its audio ends */
  double prune;          /* a beam search does not extend a phone whose log-probability is below this */
  double pause_seconds;  /* recognition starts afresh after this much silence; 0: never */
  const char* word_list;  /* a file of words (whitespace-separated, '#' comments): only these, pronounced by
                             lexicon, each as likely as the next (lt-asr --vocabulary); NULL: every lexicon word */
  const char* grammar;    /* a file of phrases, one a line: only these, each said whole, each as likely as the
                             next, pronounced by lexicon; the word search then cuts no phone (lt-asr --grammar).
                             Not with word_list or word_lm */
  const char* precision;  /* the encoder's products: "fp32", "bf16" (CPU), "tf32" (CUDA); the head stays fp32 */
  double phone_lm_weight; /* weight of the phone model's log-probability */
  double phone_bonus;     /* log-score added per phone with a phone model */
  double lm_weight;       /* weight of the word model's log-probability */
  double word_bonus;      /* log-score added per word */
  int word_beam;          /* word hypotheses kept per frame */
} lt_recognizer_options;

/* lt-asr's beam width (its --beam default, and lt_recognizer_tool_options's). */
#define LT_ASR_BEAM 64

/* cpu, fp32, greedy phones (beam 1), no language models, max_delay 0.5 s,
 * prune -10, pause 0.4 s, and lt-asr's tuned weights, bonuses and word beam:
 * lt-asr's settings with --beam 1. */
LT_API lt_recognizer_options lt_recognizer_default_options(void);
/* lt-asr's settings when given no options: lt_recognizer_default_options()
 * with lt-asr's beam (64) and the shipped phone model; words nonzero adds
 * what lt-asr --words adds, the CMU dictionary and the shipped word model
 * (all found by lt_find_shipped; the paths stay valid until the process
 * ends). With asr.safetensors (asr-stream.safetensors for a stream) a
 * recognizer made with them gives lt-asr's phones and words (a test compares
 * them). LT_ERROR when a file is not found. */
LT_API lt_status lt_recognizer_tool_options(int words, lt_recognizer_options* options);
/* The pronunciations lt's tools read words with when no lexicon is named:
 * pocketsphinx's CMU dictionary (Debian's pocketsphinx-en-us), a path that
 * need not exist. */
LT_API const char* lt_default_lexicon(void);
/* A speech model written by lt-train --task asr (asr.safetensors), with the
 * language models and lexicon the options name (NULL options: defaults). */
LT_API lt_status lt_recognizer_new(const char* model_path, const lt_recognizer_options* options,
                                   lt_recognizer** recognizer);
LT_API void lt_recognizer_free(lt_recognizer* recognizer); /* NULL is ignored */

typedef struct lt_token {
  const char* text;   /* an ARPAbet phone ("HH") or a word; valid while its transcript lives */
  double start, end;  /* seconds from the start of the audio */
} lt_token;

/* Reads an audio file (WAV, FLAC, Ogg and whatever else libsndfile reads, at
 * any rate and channel count) as 16 kHz mono samples in [-1, 1], which the
 * caller releases with lt_audio_free. */
LT_API lt_status lt_audio_read(const char* path, float** samples, int64_t* count);
LT_API void lt_audio_free(float* samples); /* NULL is ignored */

/* ---- audio as a tool is handed it: raw PCM, and audio that arrives in pieces ---- */

#define LT_SPEECH_SAMPLE_RATE 16000 /* the rate of what the readers give and the recognizers take */
#define LT_MIN_SPEECH_SAMPLES 400   /* the shortest audio the readers accept: one 25 ms analysis frame */

typedef struct lt_audio_format {
  int sample_rate;     /* > 0: raw PCM at this rate, without a header; 0: a file with a header (WAV, FLAC, ...) */
  int channels;        /* raw PCM's channels (averaged to mono) */
  const char* sample;  /* raw PCM's samples: "s16le", "s24le", "s32le", "f32le" or "u8" */
} lt_audio_format;

/* 0 (a header), 1 channel, "s16le". */
LT_API lt_audio_format lt_audio_default_format(void);
/* lt_audio_read with the input's layout: raw PCM when format->sample_rate >
 * 0 (a size that is not whole frames, an unknown sample name: LT_ERROR
 * naming the file), else (or NULL) any file libsndfile reads. Fewer than
 * LT_MIN_SPEECH_SAMPLES samples, or a float sample beyond +-2, is LT_ERROR. */
LT_API lt_status lt_audio_read_format(const char* path, const lt_audio_format* format, float** samples,
                                      int64_t* count);

typedef struct lt_audio_reader lt_audio_reader;
/* Audio read from the file descriptor fd as it arrives (stdin, a pipe, a file
 * still being written): a WAV header (PCM 8 to 32 bits or 32-bit float, any
 * rate and channels; a data size of 0 or 0xFFFFFFFF reads to the end) or,
 * with format->sample_rate > 0, raw PCM. name names the input in messages
 * ("-" reads "stdin"). follow_seconds > 0: the input ends only once it has
 * not grown for that long (tail -f); 0: at its end. fd stays the caller's. */
LT_API lt_status lt_audio_reader_new(int fd, const char* name, const lt_audio_format* format, double follow_seconds,
                                     lt_audio_reader** reader);
/* The next samples, mono at 16 kHz in [-1, 1]: what one read of the input
 * gave, *count of them at *samples (valid until the next call; 0 while the
 * input trickles in); *more is 0 once the input has ended (then *count is
 * 0). A malformed header or a read that fails is LT_ERROR naming the input. */
LT_API lt_status lt_audio_reader_read(lt_audio_reader* reader, const float** samples, int64_t* count, int* more);
LT_API void lt_audio_reader_free(lt_audio_reader* reader); /* NULL is ignored */

/* A whole recording: samples[count] of 16 kHz mono in [-1, 1]. */
LT_API lt_status lt_transcribe(lt_recognizer* recognizer, const float* samples, int64_t count,
                               lt_transcript** transcript);
/* A WAV, FLAC or other file libsndfile reads, at any rate and channel count. */
LT_API lt_status lt_transcribe_file(lt_recognizer* recognizer, const char* path, lt_transcript** transcript);
LT_API int64_t lt_transcript_phones(const lt_transcript* transcript);
LT_API int64_t lt_transcript_words(const lt_transcript* transcript);
/* Token i (0 <= i < count); a token with text NULL when i is out of range. */
LT_API lt_token lt_transcript_phone(const lt_transcript* transcript, int64_t i);
LT_API lt_token lt_transcript_word(const lt_transcript* transcript, int64_t i);
LT_API double lt_transcript_seconds(const lt_transcript* transcript); /* of audio */

typedef struct lt_timings {
  double frontend, encoder, decoder; /* seconds spent computing features, encoding and decoding */
} lt_timings;
/* A recording's, or a stream's from its start to this transcript. */
LT_API lt_timings lt_transcript_timings(const lt_transcript* transcript);
LT_API void lt_transcript_free(lt_transcript* transcript);            /* NULL is ignored */

/* Audio that arrives in pieces, decoded as it comes by a causal linear model
 * run as an RNN (asr-stream.safetensors): constant memory, and each phone
 * handed out once it is final. Its phones equal lt_transcribe's on the whole
 * recording (a step per position here, chunks there: the same up to float
 * rounding). Other models are refused. A stream of its own decodes at every
 * push; a group's (below) when its group steps. */
LT_API lt_status lt_stream_new(lt_recognizer* recognizer, lt_stream** stream);
LT_API lt_status lt_stream_push(lt_stream* stream, const float* samples, int64_t count); /* mono, 16 kHz or the rate set */
/* The sample rate of what lt_stream_push receives (16000 until set; 1000 to
 * 384000), resampled to 16 kHz as it arrives (libsoxr, high quality); set
 * before the first push. */
LT_API lt_status lt_stream_set_rate(lt_stream* stream, double sample_rate);
/* The end of the audio: what is left settles. */
LT_API lt_status lt_stream_finish(lt_stream* stream);
/* The phones (and words) settled since the last call, and the best guess at
 * what follows them, which may still change. */
LT_API lt_status lt_stream_take_settled(lt_stream* stream, lt_transcript** settled);
LT_API lt_status lt_stream_tentative(const lt_stream* stream, lt_transcript** tail);
LT_API void lt_stream_free(lt_stream* stream); /* NULL is ignored */

/* ---- many live streams, one step ----
 * A stream group holds the streams of one recognizer in one pool of
 * recurrent states (a row each, taken when a stream opens and given back
 * when it is freed) and steps all of them together: each lt_stream_group_step
 * runs every stream's new audio through its front end, then one batched
 * encoder step per position over every stream with a position ready (each
 * row at its own position), then every stream's decoders, on the CPU's
 * threads. A stream's phones and words are exactly those of the same audio
 * in a stream of its own (lt_stream_new is a group of one), whatever the
 * other streams do (on a GPU: up to its products' rounding at another batch
 * size).
 *
 * Threads: lt_stream_push, lt_stream_finish, lt_stream_take_settled and
 * lt_stream_tentative on a group's streams may be called from any thread at
 * any time, also during lt_stream_group_step; they queue audio and read what
 * the last step settled. Steps of one group run one at a time. Free a
 * group's streams before the group. */
typedef struct lt_stream_group lt_stream_group;

typedef struct lt_stream_group_stats {
  int64_t streams;     /* open streams */
  int64_t stepped;     /* streams that consumed at least one position in this step */
  int64_t positions;   /* encoder positions computed in this step, all streams together */
  int64_t rounds;      /* batched encoder calls: one for every stream's positions, one more when a pause
                          restarted a stream before positions it had stepped */
  int64_t finished;    /* streams whose end was reached in this step */
  double seconds;      /* wall time of the step */
  double encoder_seconds; /* of which the batched encoder */
} lt_stream_group_stats;

LT_API lt_status lt_stream_group_new(lt_recognizer* recognizer, lt_stream_group** group);
/* A stream of the group; lt_stream_push only queues its audio (0 copies made later). */
LT_API lt_status lt_stream_group_open(lt_stream_group* group, lt_stream** stream);
/* Decodes everything queued so far in every stream (stats: NULL or what the step did). */
LT_API lt_status lt_stream_group_step(lt_stream_group* group, lt_stream_group_stats* stats);
/* 1 once lt_stream_finish was called and a step has settled everything, else 0. */
LT_API int lt_stream_done(const lt_stream* stream);
LT_API void lt_stream_group_free(lt_stream_group* group); /* NULL is ignored */

/* ---- speech corpora, and scoring a recognizer against them ---- */

typedef struct lt_corpus lt_corpus;

typedef struct lt_utterance {
  const char* audio;        /* the audio file's path as this program can open it; NULL: no such utterance */
  double duration;          /* seconds; 0 when not given */
  const char* speaker;      /* "" when not given */
  const char* transcript;   /* its words as written; "" when not given */
  const char* const* phones; /* phone_count ARPAbet phones without stress ("HH", "AH"): the reference */
  int64_t phone_count;
  const char* const* words; /* word_count words of the transcript, upper case */
  int64_t word_count;
} lt_utterance;

/* A corpus as lt-train --data and lt-asr --ref read it: lt's manifest TSV or
 * a LibriSpeech folder (docs/speech.md); words without phones are pronounced
 * through lexicon (a CMU-dictionary file; NULL or "": lt_default_lexicon()
 * when it is installed). A malformed line, an unknown phone or a word the
 * lexicon cannot pronounce is LT_ERROR naming the file and line. */
LT_API lt_status lt_corpus_read(const char* path, const char* lexicon, lt_corpus** corpus);
LT_API int64_t lt_corpus_size(const lt_corpus* corpus);
/* Utterance i (0 <= i < size), valid while the corpus lives; audio NULL when i is out of range. */
LT_API lt_utterance lt_corpus_utterance(const lt_corpus* corpus, int64_t i);
LT_API void lt_corpus_free(lt_corpus* corpus); /* NULL is ignored */

typedef struct lt_error_counts {
  int64_t errors;         /* edit distances, summed */
  int64_t reference;      /* reference tokens, summed */
  int64_t substitutions, deletions, insertions; /* the edits of one minimal alignment per pair */
} lt_error_counts;

/* Adds to *counts the Levenshtein distance (unit costs) that turns
 * reference[n] into hypothesis[m], tokens compared as text (phones, words),
 * and the kinds of edit of one minimal alignment: summed over a corpus, the
 * phone or word error rate lt-asr --ref reports. Start from zeroed counts. */
LT_API lt_status lt_score_tokens(const char* const* reference, int64_t n, const char* const* hypothesis, int64_t m,
                                 lt_error_counts* counts);
/* errors / reference (errors alone when there is no reference token). */
LT_API double lt_error_rate(const lt_error_counts* counts);

/* ---- training: lt-train's runs ---- */

typedef struct lt_recipe lt_recipe;

/* A recipe for task "image", "copy" or "asr", every option at lt-train's
 * default (docs/training.md). */
LT_API lt_status lt_recipe_new(const char* task, lt_recipe** recipe);
/* Sets an option by lt-train's long flag without its dashes ("data",
 * "steps", "lr", "spec-augment") to its text as lt-train reads it ("true" or
 * "false" for a flag); a repeatable one ("milestones", "score", "average",
 * "note") adds a value a call. An unknown option or a value it cannot take
 * is LT_ERROR, with lt-train's line for it ("--batch: '-4' is not a whole
 * number >= 1, or 0 (the preset's)"): a range and the sentinels its --help
 * documents, one of its choices ("cpu" or "cuda", not "gpu"), a path that is
 * not empty. Progress goes to stderr unless "quiet" is "true". A run records
 * the options as set ("lt_train --task copy --steps 6 ...") in its
 * checkpoint's lt.train.command. */
LT_API lt_status lt_recipe_set(lt_recipe* recipe, const char* option, const char* value);
LT_API void lt_recipe_free(lt_recipe* recipe); /* NULL is ignored */

typedef enum lt_train_event_kind {
  LT_TRAIN_STEP = 0,
  LT_TRAIN_EVAL = 1,
  LT_TRAIN_CHECKPOINT = 2,
  LT_TRAIN_MICRO_BATCH = 3 /* a step did not fit the device's memory: passes of `rows` from here on */
} lt_train_event_kind;

typedef struct lt_train_event {
  lt_train_event_kind kind;
  int64_t step;           /* updates done */
  double loss;            /* step: the batch's mean nats per counted position; eval: the test's */
  double accuracy;        /* when the task reports one, else -1 */
  double error_rate;      /* eval of a speech model: its PER, else -1 */
  double lr;
  double examples_per_s;  /* step: since the run started */
  double epoch;
  const char* path;       /* checkpoint: the file written (valid during the call), else "" */
  int64_t rows;           /* micro-batch: the rows of a pass */
} lt_train_event;

typedef void (*lt_train_progress)(const lt_train_event* event, void* user);

typedef struct lt_train_result {
  int finished;  /* 1: ran all its steps; 0: stopped, its checkpoint written (set "resume" to go on) */
  int64_t step;  /* updates done */
  char* score;   /* finished: the trained model's test score, one line; else NULL. lt_string_free it */
} lt_train_result;

/* Trains as lt-train does (checkpoints, resume, the same bits). progress
 * (NULL: none) gets every event on the calling thread; once *stop (NULL:
 * never; read after every event and every 10 ms, so a signal handler may set
 * it) is nonzero, the run stops after the step in progress, or before its
 * first, and writes its checkpoint. A run that diverges is LT_ERROR_DIVERGED. */
LT_API lt_status lt_train(const lt_recipe* recipe, lt_train_progress progress, void* user, const volatile int* stop,
                          lt_train_result* result);
/* lt-train --eval: scores "model" on its test data; *result is lt-train's
 * output, text or JSON by "format". lt_string_free it. */
LT_API lt_status lt_evaluate(const lt_recipe* recipe, char** result);
/* lt-train --export: "model" without its optimizer state to "output", with
 * its scores; *report has a line per score and file. lt_string_free it. */
LT_API lt_status lt_export(const lt_recipe* recipe, char** report);
LT_API void lt_string_free(char* text); /* NULL is ignored */

/* ---- training: lt-train's flags, and the processes of a run ----
 * lt-train is these calls: its flags are the option table's rows, each set
 * with lt_recipe_set, and a run is lt_train, lt_evaluate or lt_export. */

typedef struct lt_recipe_option {
  const char* name;   /* lt_recipe_set's name, lt-train's long flag without dashes: "batch" */
  const char* flags;  /* lt-train's flags: "-b,--batch" */
  const char* group;  /* its --help group: "", "model", "optimization" or "speech" */
  const char* help;   /* its --help text; "" for a flag every tool shares ("device", "bf16", "tf32") */
  const char* type;   /* what --help says it takes: "INT", "UINT", "FLOAT", "TEXT", "TEXT:{a,b}"; "" for a flag */
  int flag;           /* 1: takes no value ("true" or "false") */
  int repeatable;     /* 1: each lt_recipe_set adds a value ("milestones", "score", "average", "note") */
  int shows_default;  /* 1: --help shows its default, lt_recipe_get of a new recipe */
} lt_recipe_option;

/* The options, in lt-train's --help order; their texts live as long as the process. */
LT_API int64_t lt_recipe_option_count(void);
LT_API lt_status lt_recipe_option_at(int64_t i, lt_recipe_option* option);
/* An option's value in the recipe as text, as --help shows a default ("" for
 * a repeatable one). *value is the caller's, released with lt_string_free. */
LT_API lt_status lt_recipe_get(const lt_recipe* recipe, const char* option, char** value);
/* Who runs the recipe: program begins its lines on stderr ("lt" until set;
 * lt-train's "lt-train"), command_line is what a run's checkpoints record as
 * lt.train.command (until set: "lt_train --task copy --steps 6 ...", the
 * options as set). NULL leaves either as it is; an empty program name is
 * LT_ERROR_ARGUMENT. */
LT_API lt_status lt_recipe_set_caller(lt_recipe* recipe, const char* program, const char* command_line);

/* lt_train, lt_evaluate and lt_export first check what lt-train checks before
 * anything is read: the device's name and whether the precision options apply
 * to it; lt_evaluate and lt_export run in one process. */

typedef struct lt_world {
  int rank;        /* this process's; rank 0 reports and writes */
  int size;        /* processes; 1 outside mpirun and srun */
  int local_rank;  /* among the ranks on this machine: the GPU it takes */
} lt_world;

/* The processes of a training run: started by mpirun or srun, the MPI world
 * (the MPI module loaded and MPI initialised on the first call); otherwise a
 * world of one. LT_ERROR when a launcher started the process but MPI cannot
 * start (*world is then a world of one). */
LT_API lt_status lt_world_get(lt_world* world);
/* Ends every rank with this exit status (a rank that fails alone would leave
 * the others waiting in a collective), or this process in a world of one. */
LT_API void lt_world_abort(int status);

#ifdef __cplusplus
}
#endif

#endif /* LT_H */
