/* stb_image compiled from Debian's header into the harnesses, with coverage
   and the sanitizers: lt links Debian's prebuilt libstb, which libFuzzer
   cannot see into. A definition in the executable takes precedence over the
   shared library's, so read_png runs this copy, the same source. */
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
