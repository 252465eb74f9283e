// lt-asr: transcribes audio files and live streams to ARPAbet phones with a
// speech model. One line per input on stdout (path TAB phones) or one JSON
// object per input; --stream decodes as the audio arrives with the causal
// model run as an RNN, printing phones as they settle. Errors on one input
// are one line on stderr; the others are still transcribed, and the exit
// code says something failed. A short main over lt.h: lt_transcribe per
// input, or an lt_stream fed as the audio arrives.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>

#include "asr_inputs.h"
#include "asr_output.h"
#include "command_line.h"
#include "common_options.h"
#include "lt.hpp"
#include "process_setup.h"
#include "shipped_model.h"
#include "tool_error.h"

namespace {

struct Args {
  std::vector<std::string> inputs;
  std::string model, format = "text", device = "cpu", ref, lexicon, lm, phone_lm, vocabulary, grammar;
  std::string raw_format = "s16le";
  std::string word_lexicon;  // --lexicon or the default one, with --words
  int raw_rate = 0, raw_channels = 1, threads = 0, beam = LT_ASR_BEAM;
  double follow = 0;
  bool stream = false, words = false, bf16 = false, tf32 = false, quiet = false;
  // The library's defaults (lt_recognizer_default_options) but for the beam;
  // with no flags, what lt_recognizer_tool_options gives.
  lt_recognizer_options recognizer = lt_recognizer_default_options();
};

constexpr const char* kOfflineModel = "asr.safetensors";
constexpr const char* kStreamingModel = "asr-stream.safetensors";
constexpr const char* kWordModel = "speech-words.arpa.gz";
constexpr const char* kPhoneModel = "speech-phones.arpa.gz";

}  // namespace

LT_BEFORE_LIBRARIES(lt::app::setup_process<lt::app::UnderLoad::free_cores>);

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"lt-asr: transcribe audio files and live streams to phones with a linear-transformer CTC model"};
  app.set_help_flag("-h,--help", "show every option with its default");
  app.add_option("inputs", a.inputs, "audio files (WAV, FLAC, OGG, AIFF, ... or raw PCM with --raw-rate); - is stdin")
      ->required();
  app.add_option("-m,--model", a.model,
                 std::string("speech model (default: ") + kOfflineModel + ", or " + kStreamingModel +
                     " with --stream, in $LT_WEIGHTS if set, else the shipped weights/)")->check(lt::app::kNonEmpty);
  app.add_option("-f,--format", a.format, "text (path TAB phones) or json (one object per input)")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--beam", a.beam,
                 "CTC beam width (1: greedy, the best class per frame; with the phone model a beam is 8-10 PER "
                 "points better)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--max-delay", a.recognizer.max_delay,
                 "a beam's hypotheses that still disagree about a phone (or word) this many seconds old give way to "
                 "the best one, so a stream prints each phone at most this long after its audio")
      ->capture_default_str()
      ->check(lt::app::real_in(0.001, 3600.0));
  app.add_option("--prune", a.recognizer.prune,
                 "a beam search does not extend a phone whose log-probability at a position is below this (cost "
                 "falls with it; -1e30: exact)")
      ->capture_default_str()
      ->check(lt::app::kFinite);
  app.add_option("--pause", a.recognizer.pause_seconds,
                 "recognition starts afresh after this many seconds of blank, so long recordings and streams do not "
                 "decay (0: never)")
      ->capture_default_str()
      ->check(lt::app::real_in(0.0, 3600.0));
  app.add_option("--phone-lm", a.phone_lm,
                 std::string("phone n-gram model (ARPA, plain or gzip) that a beam search decodes the phones with, or "
                             "'none' (default: ") +
                     kPhoneModel + " in $LT_WEIGHTS if set, else the shipped weights/; greedy decoding uses none)")
      ->check(lt::app::kNonEmpty);
  app.add_option("--phone-lm-weight", a.recognizer.phone_lm_weight, "weight of the phone model's log-probability")
      ->capture_default_str()
      ->check(lt::app::real_at_least(0));
  app.add_option("--phone-bonus", a.recognizer.phone_bonus, "log-score added per phone with a phone model")
      ->capture_default_str()
      ->check(lt::app::kFinite);
  app.add_flag("--stream", a.stream,
               "decode as the audio arrives (a causal-linear model as an RNN: constant memory), printing phones "
               "as they settle; a terminal shows the tentative ones too");
  app.add_option("--follow", a.follow,
                 "--stream: a file ends only after it has not grown for this many seconds (0: at its end)")
      ->capture_default_str()
      ->check(lt::app::real_at_least(0));
  app.add_flag("--words", a.words,
               "decode words too: a lexicon-constrained CTC beam search with a word n-gram model (text: path TAB words "
               "TAB phones)");
  app.add_option("--lm", a.lm, std::string("--words: ARPA word model, plain or gzip, or 'none' (default: ") + kWordModel +
                                   " in $LT_WEIGHTS if set, else the shipped weights/)")->check(lt::app::kNonEmpty);
  app.add_option("--vocabulary", a.vocabulary,
                 "--words: recognise only these words (a word list, pronounced by --lexicon), each as likely as "
                 "the next: command-style use; no word model unless --lm names one")
      ->check(lt::app::kNonEmpty);
  app.add_option("--grammar", a.grammar,
                 "--words: recognise only these phrases (one a line, pronounced by --lexicon), each said alone and "
                 "whole, each as likely as the next: command-style use (the word search then cuts no phone, so "
                 "that a whole phrase always fits)")
      ->check(lt::app::kNonEmpty)
      ->excludes("--vocabulary")
      ->excludes("--lm");
  app.add_option("--lm-weight", a.recognizer.lm_weight, "--words: weight of the word model's log-probability")
      ->capture_default_str()
      ->check(lt::app::real_at_least(0));
  app.add_option("--word-bonus", a.recognizer.word_bonus, "--words: log-score added per word")->capture_default_str()->check(lt::app::kFinite);
  app.add_option("--word-beam", a.recognizer.word_beam, "--words: hypotheses kept per frame")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--ref", a.ref, "score against references: a manifest TSV or a LibriSpeech folder (PER on stderr, or in the JSON)")->check(lt::app::kNonEmpty);
  app.add_option("--lexicon", a.lexicon, "pronunciations of --words' vocabulary and of --ref's words (CMU dict format; default: pocketsphinx's CMU dict)")->check(lt::app::kNonEmpty);
  app.add_option("--raw-rate", a.raw_rate, "inputs are raw PCM at this sample rate (no header)")->check(CLI::Range(1000, 384000));
  app.add_option("--raw-channels", a.raw_channels, "raw PCM channels")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--raw-format", a.raw_format, "raw PCM samples: s16le, s24le, s32le, f32le or u8")
      ->capture_default_str()
      ->check(CLI::IsMember({"s16le", "s24le", "s32le", "f32le", "u8"}));
  lt::app::add_device_option(app, a.device);
  lt::app::add_threads_option(app, a.threads);
  lt::app::add_precision_flags(app, a.bf16, a.tf32, lt::app::PrecisionUse::recognition);
  app.add_flag("-q,--quiet", a.quiet, "no summary on stderr");
  if (const int status = lt::app::parse_command_line(app, argc, argv, "lt-asr"); status >= 0) return status;

  lt::app::InputOptions in;
  std::unique_ptr<lt::app::References> refs;
  lt::api::Recognizer recognizer;
  try {
    lt::app::check(a.follow == 0 || a.stream, "--follow is an option of --stream");
    for (const char* o : {"--lm", "--lm-weight", "--word-bonus", "--word-beam", "--vocabulary", "--grammar"})
      lt::app::check(a.words || app.count(o) == 0, std::string(o) + " is an option of --words");
    lt_set_threads(a.threads);
    lt_recognizer_options& ro = a.recognizer;
    ro.device = a.device.c_str();
    ro.precision = lt::app::precision_name(a.bf16, a.tf32);
    ro.beam = a.beam;
    const bool use_phone_lm = a.beam > 1 && a.phone_lm != "none";
    for (const char* o : {"--phone-lm", "--phone-lm-weight", "--phone-bonus"})
      lt::app::check(app.count(o) == 0 || a.phone_lm == "none" || a.beam > 1,
                     std::string(o) + " needs a beam search (--beam > 1)");
    lt::app::check(app.count("--max-delay") == 0 || a.beam > 1 || a.words,
                   "--max-delay needs a search to settle (--beam > 1 or --words)");
    in.follow = a.follow;
    if (a.raw_rate > 0) in.raw = {a.raw_rate, a.raw_channels, a.raw_format.c_str()};
    if (a.model.empty()) a.model = lt::app::find_shipped_model(a.stream ? kStreamingModel : kOfflineModel);
    if (use_phone_lm && a.phone_lm.empty()) a.phone_lm = lt::app::find_shipped_model(kPhoneModel);
    if (use_phone_lm) ro.phone_lm = a.phone_lm.c_str();
    if (a.words) {
      a.word_lexicon = a.lexicon.empty() ? lt::api::find_shipped("lexicon") : a.lexicon;
      ro.lexicon = a.word_lexicon.c_str();
      if (!a.vocabulary.empty()) {
        ro.word_list = a.vocabulary.c_str();
        if (a.lm.empty()) a.lm = "none";  // a word list's words are equally likely
      }
      if (!a.grammar.empty()) {
        ro.grammar = a.grammar.c_str();
      } else if (a.lm != "none") {
        if (a.lm.empty()) a.lm = lt::app::find_shipped_model(kWordModel);
        ro.word_lm = a.lm.c_str();
      }
    }
    // Made now, so that a model, lexicon or language model it cannot use is
    // one line before any input, not one per input.
    recognizer = lt::api::new_recognizer(a.model, ro);
    if (a.stream) lt::api::new_stream(recognizer.get());
    refs = a.ref.empty() ? std::make_unique<lt::app::References>()
                         : std::make_unique<lt::app::References>(a.ref, a.lexicon);
  } catch (const std::exception& e) {
    std::cerr << "lt-asr: " << e.what() << "\n";
    return 1;
  }

  lt::app::AsrOutput out(a.format == "json", a.words, a.model, *refs);
  int failed = 0;
  double audio = 0, wall = 0;
  for (const std::string& path : a.inputs) {
    try {
      lt::app::AsrResult r;
      if (a.stream) {
        r = lt::app::stream_input(path, recognizer.get(), in, out);
      } else {
        r = lt::app::transcribe_input(path, recognizer.get(), in);
      }
      out.write(r);
      audio += r.duration;
      wall += r.wall;
    } catch (const std::exception& e) {
      out.end_line();
      std::cerr << "lt-asr: " << e.what() << "\n";
      ++failed;
    }
  }
  out.finish();
  if (!a.quiet && audio > 0)
    std::fprintf(stderr, "lt-asr: %.1f s of audio in %.2f s (%.0fx real time), %d of %zu inputs failed\n", audio, wall,
                 audio / wall, failed, a.inputs.size());
  return failed > 0 ? 1 : 0;
}
