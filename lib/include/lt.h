/* lt.h: the C API of lt, linear transformers as RNNs (Katharopoulos et al.,
 * "Transformers are RNNs", ICML 2020). Link with -llt (pkg-config lt, or
 * CMake's find_package(lt) and target lt::lt).
 *
 * A model is loaded once; its recurrent state is a value the caller owns:
 * made for a batch of sequences, stepped one position at a time or continued
 * over a chunk, forked, reset, saved and loaded. Every position costs the
 * same, whatever came before (the paper's eq. 18-20).
 *
 *   #include <lt.h>
 *
 *   lt_model* model;
 *   if (lt_model_load("mnist.safetensors", "cpu", &model) != LT_OK) {
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
  LT_ERROR_MEMORY = 3    /* an allocation failed */
} lt_status;

/* The library's version and commit, e.g. "0.1.0 (f8f481b)". */
LT_API const char* lt_version(void);
/* The calling thread's last failure, one line; "" when none failed yet. */
LT_API const char* lt_last_error(void);

/* ---- models ---- */

typedef struct lt_model lt_model;

typedef struct lt_model_info {
  char family[16];       /* "image" or "copy": what the checkpoint's lt.model says */
  int64_t vocabulary;    /* inputs are tokens 0..vocabulary-1 */
  int64_t positions;     /* the longest input: a state holds this many positions */
  int64_t head_width;    /* floats of a position's output (lt_state_step's head) */
  int64_t height, width, channels; /* images: positions + 1 subpixels; 0 for other models */
  int64_t parameters;
} lt_model_info;

/* Loads a safetensors checkpoint written by lt-train (or the reference's
 * image models) on device "cpu" or "cuda". */
LT_API lt_status lt_model_load(const char* path, const char* device, lt_model** model);
LT_API lt_status lt_model_get_info(const lt_model* model, lt_model_info* info);
LT_API void lt_model_free(lt_model* model); /* NULL is ignored */

/* ---- recurrent state ---- */

typedef struct lt_state lt_state;

/* A state for `batch` sequences at position 0. */
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
/* Writes the state to a file (safetensors, with its model's architecture
 * and a checksum of its weights), and loads one for the same model: a state
 * of another model is refused, naming the file and what differs. */
LT_API lt_status lt_state_save(const lt_state* state, const char* path);
LT_API lt_status lt_state_load(lt_model* model, const char* path, lt_state** state);
LT_API void lt_state_free(lt_state* state); /* NULL is ignored */

/* ---- images ---- */

/* Draws bytes[rows] from the image model's heads[rows x head_width] for
 * subpixel `position`: a pure function of (seed, position, row), the same on
 * every device. */
LT_API lt_status lt_image_draw(lt_model* model, const float* heads, int64_t rows, uint64_t seed, int64_t position,
                               int32_t* bytes);
/* Samples `count` images into pixels[count x height x width x channels]
 * (raster order, RGB interleaved), as lt-sample-image -n count -b count
 * -s seed does: the same seed gives the same images. */
LT_API lt_status lt_image_sample(lt_model* model, int64_t count, uint64_t seed, uint8_t* pixels);

#ifdef __cplusplus
}
#endif

#endif /* LT_H */
