/* Samples one image from an lt image model through the recurrent state,
 * subpixel by subpixel, and prints it as text: each step costs the same,
 * whatever came before. Built against the installed package:
 *   cmake -S . -B build -DCMAKE_PREFIX_PATH=<prefix> && cmake --build build
 *   cc sample.c $(pkg-config --cflags --libs lt) -Wl,-rpath,$(pkg-config --variable=libdir lt) -o sample
 *   ./sample <prefix>/share/lt/weights/mnist.safetensors 42
 */
#include <lt.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char* what) {
  fprintf(stderr, "sample: %s: %s\n", what, lt_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: sample MODEL.safetensors [SEED]\n");
    return 2;
  }
  const uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
  lt_model* model = NULL;
  if (lt_model_load(argv[1], NULL, &model) != LT_OK) return fail("lt_model_load"); /* cpu, fp32 */
  lt_model_info info;
  if (lt_model_get_info(model, &info) != LT_OK) return fail("lt_model_get_info");
  fprintf(stderr, "lt %s: %s model, %lldx%lldx%lld\n", lt_version(), info.family, (long long)info.height,
          (long long)info.width, (long long)info.channels);

  lt_state* state = NULL;
  if (lt_state_new(model, 1, &state) != LT_OK) return fail("lt_state_new");
  const int64_t subpixels = info.positions + 1;
  float* head = malloc(sizeof(float) * (size_t)info.head_width);
  unsigned char* image = calloc((size_t)subpixels, 1);
  int32_t pixel = 0; /* the first subpixel; lt_image_sample draws it from the training data's histogram */
  for (int64_t t = 0; t < info.positions; ++t) {
    if (lt_state_step(state, &pixel, head) != LT_OK) return fail("lt_state_step");
    if (lt_image_draw(model, head, 1, seed, t + 1, &pixel) != LT_OK) return fail("lt_image_draw");
    image[t + 1] = (unsigned char)pixel;
  }
  /* Grey levels as characters, two per pixel (the first channel of colour images). */
  const char* ramp = " .:-=+*#%@";
  for (int64_t y = 0; y < info.height; ++y) {
    for (int64_t x = 0; x < info.width; ++x) {
      const char c = ramp[image[(y * info.width + x) * info.channels] * 10 / 256];
      putchar(c);
      putchar(c);
    }
    putchar('\n');
  }
  free(image);
  free(head);
  lt_state_free(state);
  lt_model_free(model);
  return 0;
}
