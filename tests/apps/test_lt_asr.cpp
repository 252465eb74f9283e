// lt-asr end to end with random speech models saved by the test: text and
// JSON output on utterances synthesized with espeak-ng, streaming against
// whole files (from files and from a pipe), scoring against references, and
// one-line refusals of bad inputs while the others are still transcribed.
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli.h"
#include "audio/audio_file.h"
#include "audio/audio_files.h"
#include "speech/random_speech_model.h"
#include "speech/speech_corpus.h"

using namespace lt;
using namespace lt::test;

namespace {

// A random model over the 40 phone classes (words need them).
std::string save_model(const TempDir& dir, const std::string& name, Direction direction, uint64_t seed) {
  Rng rng(seed);
  SpeechModel m = random_speech_model(rng, direction, 64, seed, kPhoneClasses);
  const std::string path = dir.file(name);
  m.model->save(path, m.frontend.metadata(), m.frontend.tensors());
  return path;
}

std::string espeak(const TempDir& dir, const std::string& name, const std::string& voice, const std::string& text) {
  const std::string wav = dir.file(name);
  const std::string cmd = "espeak-ng -v " + voice + " -w '" + wav + "' '" + text + "' 2>/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return wav;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The phones of a text line "path\tPH ON ES".
std::string phones_of(const std::string& line) { return line.substr(line.find('\t') + 1); }

}  // namespace

TEST_CASE("lt-asr writes one line per input, or JSON whose phones are timed in order inside the audio") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string model = save_model(tmp, "b.safetensors", Direction::bidirectional, seed);
  const std::string a = espeak(tmp, "a.wav", "en-us", "the quick brown fox jumps over the lazy dog");
  const std::string b = espeak(tmp, "b.wav", "en-gb", "seven days without rain");
  CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' '" + a + "' '" + b + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> text = lines(r.out);
  REQUIRE(text.size() == 2);
  CHECK(text[0].rfind(a + "\t", 0) == 0);
  CHECK(text[1].rfind(b + "\t", 0) == 0);
  for (const std::string& l : text) {
    std::istringstream phones(phones_of(l));
    int n = 0;
    for (std::string p; phones >> p; ++n) CHECK(phone_id(p) > 0);
    CHECK(n > 0);
  }

  r = run_tool(tmp, "lt-asr", "-m '" + model + "' -f json --beam 4 '" + a + "' '" + b + "'");
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> json = lines(r.out);
  REQUIRE(json.size() == 2);
  for (const std::string& l : json) {
    const nlohmann::json j = nlohmann::json::parse(l);
    const double duration = j["duration"];
    CHECK(duration > 0.5);
    CHECK(j["model"] == model);
    CHECK(j["rtf"].get<double>() > 0);
    CHECK(j["encoder_seconds"].get<double>() > 0);
    double previous_end = 0;
    REQUIRE(j["phones"].size() > 0);
    for (const auto& p : j["phones"]) {
      const double start = p["start"], end = p["end"];
      CHECK(phone_id(p["phone"]) > 0);
      CHECK(previous_end <= start);
      CHECK(start < end);
      CHECK(end <= duration);
      previous_end = end;
    }
  }
}

TEST_CASE("lt-asr --stream gives the phones of the whole file, from a file, a pipe and a paced live source") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string model = save_model(tmp, "c.safetensors", Direction::causal, seed);
  const std::string a = espeak(tmp, "a.wav", "en-us", "streaming speech recognition with a recurrent state");
  // The same audio as FLAC, which the stream's reader cannot parse as it arrives.
  const std::string flac = tmp.file("a.flac");
  {
    const std::vector<float> x = read_audio(a);
    SF_INFO info{};
    info.samplerate = kSpeechSampleRate;
    info.channels = 1;
    info.format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
    SNDFILE* f = sf_open(flac.c_str(), SFM_WRITE, &info);
    REQUIRE(f != nullptr);
    REQUIRE(sf_writef_float(f, x.data(), sf_count_t(x.size())) == sf_count_t(x.size()));
    sf_close(f);
  }
  for (const char* beam : {"1", "8"}) {
    const CommandResult whole = run_tool(tmp, "lt-asr", "-m '" + model + "' --beam " + beam + " '" + a + "'");
    REQUIRE(whole.exit_code == 0);
    const CommandResult file = run_tool(tmp, "lt-asr", "-m '" + model + "' --stream --beam " + beam + " '" + a + "'");
    INFO(file.err);
    REQUIRE(file.exit_code == 0);
    CHECK(file.out == whole.out);
    // A finished file of another format: read whole, fed as if it arrived.
    const CommandResult flac_whole = run_tool(tmp, "lt-asr", "-m '" + model + "' --beam " + beam + " '" + flac + "'");
    const CommandResult flac_stream =
        run_tool(tmp, "lt-asr", "-m '" + model + "' --stream --beam " + beam + " '" + flac + "'");
    INFO(flac_stream.err);
    REQUIRE(flac_stream.exit_code == 0);
    CHECK(flac_stream.out == flac_whole.out);
    CHECK(lines(flac_stream.out).size() == 1);
    // stdin through a pipe: the tool runs as "$0" of a shell that pipes the file into it.
    const CommandResult pipe = run_tool(tmp, "lt-asr", "-m '" + model + "' --stream --beam " + beam + " -",
                                        "sh -c 'cat \"" + a + "\" | \"$0\" \"$@\"' ");
    INFO(pipe.err);
    REQUIRE(pipe.exit_code == 0);
    CHECK(phones_of(lines(pipe.out).at(0)) == phones_of(lines(whole.out).at(0)));
    // As a live source delivers it: scripts/speech/pace.py's open-ended WAV in 30 ms pieces (20 times real time).
    const CommandResult paced =
        run_tool(tmp, "lt-asr", "-m '" + model + "' --stream --beam " + beam + " -",
                 "sh -c 'python3 \"" + std::string(LT_SCRIPTS_DIR) + "/speech/pace.py\" --speed 20 --piece-ms 30 \"" +
                     a + "\" | \"$0\" \"$@\"' ");
    INFO(paced.err);
    REQUIRE(paced.exit_code == 0);
    CHECK(phones_of(lines(paced.out).at(0)) == phones_of(lines(whole.out).at(0)));
    const CommandResult json = run_tool(tmp, "lt-asr", "-m '" + model + "' --stream -f json '" + a + "'");
    REQUIRE(json.exit_code == 0);
    const nlohmann::json j = nlohmann::json::parse(json.out);
    CHECK(j["latency_max_ms"].get<double>() >= j["latency_mean_ms"].get<double>());
    CHECK(j["latency_mean_ms"].get<double>() >= 0);
  }
}

TEST_CASE("lt-asr --ref scores each input and the whole against its reference phones") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string model = save_model(tmp, "b.safetensors", Direction::bidirectional, seed);
  const std::string a = espeak(tmp, "a.wav", "en-us", "a reference to score against");
  const std::string b = espeak(tmp, "b.wav", "en-us", "another one");
  const CommandResult plain = run_tool(tmp, "lt-asr", "-m '" + model + "' a.wav b.wav", "cd '" + tmp.file("") + "' && ");
  REQUIRE(plain.exit_code == 0);
  const std::vector<std::string> out = lines(plain.out);
  REQUIRE(out.size() == 2);
  // a.wav's reference is exactly what was decoded, b.wav's lacks its first phone.
  std::string hyp_a = phones_of(out[0]), hyp_b = phones_of(out[1]);
  const std::string ref_b = hyp_b.find(' ') == std::string::npos ? "AA" : hyp_b.substr(hyp_b.find(' ') + 1);
  const std::string tsv = "path\twords\tphones\na.wav\tX\t" + hyp_a + "\nb.wav\tX\t" + ref_b + "\n";
  write_bytes(tmp.file("ref.tsv"), std::vector<uint8_t>(tsv.begin(), tsv.end()));
  const CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' -f json --ref ref.tsv a.wav b.wav", "cd '" + tmp.file("") + "' && ");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> json = lines(r.out);
  REQUIRE(json.size() == 3);
  const nlohmann::json ja = nlohmann::json::parse(json[0]), jb = nlohmann::json::parse(json[1]),
                       summary = nlohmann::json::parse(json[2]);
  CHECK(ja["per"] == 0.0);
  const int64_t nb = std::count(ref_b.begin(), ref_b.end(), ' ') + 1;
  CHECK(jb["errors"] == 1);
  CHECK(jb["reference_phones"] == nb);
  CHECK(summary["summary"] == true);
  CHECK(summary["errors"] == 1);
  CHECK(summary["scored"] == 2);
  // Text: PER per input and overall on stderr.
  const CommandResult t = run_tool(tmp, "lt-asr", "-m '" + model + "' --ref ref.tsv a.wav b.wav", "cd '" + tmp.file("") + "' && ");
  CHECK(t.err.find("a.wav: PER 0.00%") != std::string::npos);
  CHECK(t.err.find("PER") != std::string::npos);
}

TEST_CASE("lt-asr --words decodes words of the lexicon beside the phones, timed inside the audio, and scores WER") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string model = save_model(tmp, "c.safetensors", Direction::causal, seed);
  const std::string a = espeak(tmp, "a.wav", "en-us", "words from a tiny lexicon");
  // Every phone is a word, so the lexicon covers any phone sequence the
  // random model decodes; a few longer words share their beginnings.
  std::string lex = "HA AA AE\nHO AO AW AH\nHOT AO AW T\n";
  for (int32_t p = 1; p < kPhoneClasses; ++p) lex += phone_names()[size_t(p)] + " " + phone_names()[size_t(p)] + "\n";
  write_bytes(tmp.file("tiny.dict"), std::vector<uint8_t>(lex.begin(), lex.end()));
  const std::string common = "-m '" + model + "' --words --lm none --lexicon '" + tmp.file("tiny.dict") + "' ";
  CommandResult r = run_tool(tmp, "lt-asr", common + "'" + a + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> text = lines(r.out);
  REQUIRE(text.size() == 1);
  // path TAB words TAB phones
  const size_t tab1 = text[0].find('\t'), tab2 = text[0].find('\t', tab1 + 1);
  REQUIRE(tab2 != std::string::npos);
  const std::string words = text[0].substr(tab1 + 1, tab2 - tab1 - 1);
  CHECK(!words.empty());
  std::istringstream in(words);
  for (std::string w; in >> w;) CHECK(("\n" + lex).find("\n" + w + " ") != std::string::npos);
  // The words spell a phone sequence the decoder found: the same as the phones here.
  r = run_tool(tmp, "lt-asr", common + "-f json '" + a + "'");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["words"].size() > 0);
  double previous_end = 0;
  for (const auto& w : j["words"]) {
    CHECK(previous_end <= w["start"].get<double>());
    CHECK(w["start"].get<double>() < w["end"].get<double>());
    CHECK(w["end"].get<double>() <= j["duration"].get<double>());
    previous_end = w["start"];
  }
  CHECK(j["text"] == words);
  // --ref with words: WER against the manifest's words, 0 when they are the decoded ones.
  const std::string tsv = "path\twords\tphones\na.wav\t" + words + "\tAA\n";
  write_bytes(tmp.file("ref.tsv"), std::vector<uint8_t>(tsv.begin(), tsv.end()));
  r = run_tool(tmp, "lt-asr", common + "-f json --ref ref.tsv a.wav", "cd '" + tmp.file("") + "' && ");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json scored = nlohmann::json::parse(lines(r.out).at(0));
  INFO(r.out);
  CHECK(scored["wer"]["wer"] == 0.0);
  CHECK(scored["wer"]["reference_words"].get<int>() > 0);
  // Word options without --words are refused.
  r = run_tool(tmp, "lt-asr", "-m '" + model + "' --lm-weight 2 '" + a + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("--lm-weight is an option of --words") != std::string::npos);
}

TEST_CASE("lt-asr refuses each bad input in one line, transcribes the others and exits non-zero") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string model = save_model(tmp, "c.safetensors", Direction::causal, seed);
  const std::string good = espeak(tmp, "good.wav", "en-us", "good");
  const std::string empty = tmp.file("empty.wav"), junk = tmp.file("junk.wav"), tiny = tmp.file("tiny.wav"),
                    nan = tmp.file("nan.wav"), missing = tmp.file("missing.wav"), raw = tmp.file("odd.raw");
  write_bytes(empty, {});
  write_bytes(junk, std::vector<uint8_t>(3000, 42));
  write_float_wav(tiny, std::vector<float>(200, 0.1f));
  std::vector<float> x(4000, 0.1f);
  x[1234] = std::nanf("");
  write_float_wav(nan, x);
  write_bytes(raw, std::vector<uint8_t>(3001, 1));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {empty, "not audio"}, {junk, "not audio"}, {tiny, "shorter than one 25 ms"}, {nan, "sample 1234 is NaN"},
      {missing, "missing.wav"}};
  for (const bool stream : {false, true}) {
    for (const auto& [bad, why] : cases) {
      const CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' " + (stream ? "--stream " : "") + "-q '" +
                                                          bad + "' '" + good + "'");
      INFO("stream " << stream << ": " << r.err);
      CHECK(r.exit_code == 1);
      if (!stream || bad != empty) CHECK(r.err.find(bad) != std::string::npos);
      if (!stream) CHECK(r.err.find(why) != std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      CHECK(r.out.find(bad) == std::string::npos);  // nothing half-written
      CHECK(r.out.find(good + "\t") != std::string::npos);
    }
  }
  // Raw flags that do not divide the size (3001 bytes of 2-byte samples).
  CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' -q --raw-rate 16000 '" + raw + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(raw) != std::string::npos);
  // Streaming needs a causal linear model: one line before any input.
  const std::string bidirectional = save_model(tmp, "b.safetensors", Direction::bidirectional, seed);
  r = run_tool(tmp, "lt-asr", "-m '" + bidirectional + "' --stream '" + good + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("causal-linear") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
  // Not a speech model.
  const std::string image = tiny_image_checkpoint(tmp, "image.safetensors");
  r = run_tool(tmp, "lt-asr", "-m '" + image + "' '" + good + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("not a speech model") != std::string::npos);
}

TEST_CASE("lt-asr with no -m uses the shipped speech models, offline and streaming, and they hear a training voice") {
  TempDir tmp;
  // A voice of the training corpus (espeak-ng en-us) on a sentence it did not read.
  const std::string a = espeak(tmp, "a.wav", "en-us", "the quick brown fox jumps over the lazy dog");
  const std::string tsv = "path\twords\tphones\na.wav\tX\tDH AH K W IH K B R AW N F AA K S JH AH M P S OW V ER DH AH "
                          "L EY Z IY D AO G\n";
  write_bytes(tmp.file("ref.tsv"), std::vector<uint8_t>(tsv.begin(), tsv.end()));
  for (const char* mode : {"", "--stream "}) {
    const CommandResult r = run_tool(tmp, "lt-asr", std::string(mode) + "-f json --ref ref.tsv a.wav",
                                     "cd '" + tmp.file("") + "' && env -u LT_WEIGHTS ");
    INFO(mode << r.err);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json j = nlohmann::json::parse(lines(r.out).at(0));
    CHECK(j["model"].get<std::string>().find(*mode ? "asr-stream.safetensors" : "asr.safetensors") != std::string::npos);
    // A random model scores about 100%; the shipped ones (30-35% on held-out voices) far less.
    CHECK(j["per"].get<double>() < 0.6);
  }
}

TEST_CASE("lt-asr --words with the shipped models and word model transcribes a training voice's sentences") {
  TempDir tmp;
  const std::vector<std::string> said = {"please enter your account number", "the weather is nice today",
                                         "call me back in ten minutes", "what time is it"};
  std::string manifest = "path\twords\n", inputs;
  for (size_t i = 0; i < said.size(); ++i) {
    const std::string name = "s" + std::to_string(i) + ".wav";
    espeak(tmp, name, "en-us", said[i]);
    manifest += name + "\t" + said[i] + "\n";
    inputs += " " + name;
  }
  write_bytes(tmp.file("said.tsv"), std::vector<uint8_t>(manifest.begin(), manifest.end()));
  const CommandResult r =
      run_tool(tmp, "lt-asr", "--words --ref said.tsv" + inputs, "cd '" + tmp.file("") + "' && env -u LT_WEIGHTS ");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.err.rfind("WER ");
  REQUIRE(at != std::string::npos);
  // 20 words of common English: a general word model gets nearly all of them (2 errors at commit 94f104a).
  CHECK(std::stod(r.err.substr(at + 4)) <= 20.0);
}

TEST_CASE("lt-asr --words --vocabulary: command-style words from a word list, and one line for a word it cannot say") {
  TempDir tmp;
  // A training voice saying two commands of a small vocabulary.
  const std::string a = espeak(tmp, "a.wav", "en-us", "turn the light on");
  const std::string b = espeak(tmp, "b.wav", "en-us", "open the door");
  const std::string lex = "TURN T ER N\nTHE DH AH\nLIGHT L AY T\nON AA N\nOFF AO F\nOPEN OW P AH N\nCLOSE K L OW Z\n"
                          "DOOR D AO R\nWINDOW W IH N D OW\nSTOP S T AA P\nUNUSED AH N Y UW Z D\n";
  write_bytes(tmp.file("lex.dict"), std::vector<uint8_t>(lex.begin(), lex.end()));
  const std::string list = "turn the light on off  # a comment\nopen close door window\nstop\n";
  write_bytes(tmp.file("commands.txt"), std::vector<uint8_t>(list.begin(), list.end()));
  const std::string common = "--words --lexicon lex.dict --vocabulary commands.txt ";
  const std::string in_tmp = "cd '" + tmp.file("") + "' && env -u LT_WEIGHTS ";
  CommandResult r = run_tool(tmp, "lt-asr", common + "a.wav b.wav", in_tmp);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> text = lines(r.out);
  REQUIRE(text.size() == 2);
  CHECK(text[0].rfind("a.wav\tTURN THE LIGHT ON\t", 0) == 0);
  CHECK(text[1].rfind("b.wav\tOPEN THE DOOR\t", 0) == 0);
  // A word the lexicon cannot pronounce: one line naming the list and its line.
  write_bytes(tmp.file("bad.txt"), std::vector<uint8_t>{'o', 'n', '\n', 'z', 'x', 'q', '\n'});
  r = run_tool(tmp, "lt-asr", "--words --lexicon lex.dict --vocabulary bad.txt a.wav", in_tmp);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("bad.txt:2: 'ZXQ' has no pronunciation in lex.dict") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  r = run_tool(tmp, "lt-asr", "--vocabulary commands.txt a.wav", in_tmp);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("--vocabulary is an option of --words") != std::string::npos);
}

TEST_CASE("lt-asr --words --grammar: only whole phrases of the grammar, and one line for a phrase it cannot use") {
  TempDir tmp;
  const std::string a = espeak(tmp, "a.wav", "en-us", "turn the light on");
  const std::string b = espeak(tmp, "b.wav", "en-us", "open the window");  // not a phrase of the grammar
  const std::string lex = "TURN T ER N\nTHE DH AH\nLIGHT L AY T\nON AA N\nOFF AO F\nOPEN OW P AH N\nCLOSE K L OW Z\n"
                          "DOOR D AO R\nWINDOW W IH N D OW\nSTOP S T AA P\n";
  write_bytes(tmp.file("lex.dict"), std::vector<uint8_t>(lex.begin(), lex.end()));
  const std::vector<std::string> phrases = {"TURN THE LIGHT ON", "TURN THE LIGHT OFF", "OPEN THE DOOR",
                                            "CLOSE THE WINDOW", "STOP"};
  std::string grammar = "# commands\n";
  for (const std::string& p : phrases) grammar += p + "\n";
  write_bytes(tmp.file("commands.txt"), std::vector<uint8_t>(grammar.begin(), grammar.end()));
  const std::string in_tmp = "cd '" + tmp.file("") + "' && env -u LT_WEIGHTS ";
  CommandResult r = run_tool(tmp, "lt-asr", "--words --lexicon lex.dict --grammar commands.txt a.wav b.wav", in_tmp);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> text = lines(r.out);
  REQUIRE(text.size() == 2);
  CHECK(text[0].rfind("a.wav\tTURN THE LIGHT ON\t", 0) == 0);
  // Whatever is heard is one whole phrase.
  const std::string heard = text[1].substr(6, text[1].find('\t', 6) - 6);
  INFO(heard);
  CHECK(std::find(phrases.begin(), phrases.end(), heard) != phrases.end());
  // A word the lexicon cannot pronounce, or a phrase too long: one line naming the grammar and its line.
  write_bytes(tmp.file("bad.txt"), std::vector<uint8_t>{'o', 'n', '\n', 'o', 'n', ' ', 'z', 'x', 'q', '\n'});
  r = run_tool(tmp, "lt-asr", "--words --lexicon lex.dict --grammar bad.txt a.wav", in_tmp);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("bad.txt:2: 'ZXQ' has no pronunciation in lex.dict") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  std::string longest;
  for (int i = 0; i < 31; ++i) longest += "stop ";
  write_bytes(tmp.file("long.txt"), std::vector<uint8_t>(longest.begin(), longest.end()));
  r = run_tool(tmp, "lt-asr", "--words --lexicon lex.dict --grammar long.txt a.wav", in_tmp);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("long.txt:1: a phrase of 31 words (at most 30)") != std::string::npos);
  r = run_tool(tmp, "lt-asr", "--words --grammar commands.txt --vocabulary commands.txt a.wav", in_tmp);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("excludes") != std::string::npos);
}

TEST_CASE("lt-asr --help shows every option with its default") {
  TempDir tmp;
  const CommandResult r = run_tool(tmp, "lt-asr", "--help");
  CHECK(r.exit_code == 0);
  for (const char* o : {"--model", "--format TEXT:{text,json}=text", "--beam INT:INT in [1 - 1024]=64", "--stream",
                        "--follow FLOAT:FLOAT >= 0=0", "--ref", "--raw-rate", "--raw-format", "--device TEXT=cpu",
                        "--threads INT:INT>=0=0", "--bf16", "--tf32", "--phone-lm", "--phone-lm-weight FLOAT:FLOAT >= 0=1.25",
                        "--phone-bonus FLOAT:FINITE=2.5", "--max-delay FLOAT:FLOAT in [0.001 - 3600]=0.5", "--prune FLOAT:FINITE=-10",
                        "--word-beam INT:INT in [1 - 4096]=64", "--lm-weight FLOAT:FLOAT >= 0=1", "--word-bonus FLOAT:FINITE=0",
                        "--pause FLOAT:FLOAT in [0 - 3600]=0.4"})
    CHECK(r.out.find(o) != std::string::npos);
}

TEST_CASE("lt-asr --phone-lm: the model changes the phones a beam finds, 'none' is the plain beam, misuse is one line") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string model = save_model(tmp, "c.safetensors", Direction::causal, seed);
  const std::string a = espeak(tmp, "a.wav", "en-us", "phones scored by a phone language model");
  auto phones = [&](const std::string& flags) {
    const CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' -q " + flags + " '" + a + "'");
    INFO(flags << ": " << r.err);
    CHECK(r.exit_code == 0);
    return phones_of(r.out);
  };
  // A model where AH is almost certain after anything: with a heavy weight every phone found is AH.
  write_text(tmp.file("ah.arpa"),
             "\\data\\\nngram 1=4\n\n\\1-grams:\n-99 <s>\n-0.5 </s>\n-0.0001 AH\n-8 <unk>\n\n\\end\\\n");
  const std::string plain = phones("--beam 8 --phone-lm none");
  // Unpruned: the default --prune keeps the search from phones the model all but rules out.
  const std::string with_lm =
      phones("--beam 8 --prune -1e30 --phone-lm '" + tmp.file("ah.arpa") + "' --phone-lm-weight 200");
  CHECK(phones("--beam 8 --phone-lm none") == plain);
  CHECK(with_lm.find("AH") != std::string::npos);
  std::istringstream in(with_lm);
  for (std::string p; in >> p;) CHECK(p == "AH");
  CHECK(with_lm != plain);
  // --prune 1 lets no phone through (no log-probability is above 0), with the phone model or without.
  CHECK(phones("--beam 8 --prune 1") == "\n");
  CHECK(phones("--beam 8 --prune 1 --phone-lm none") == "\n");
  // Greedy decoding has no search to weigh or hypotheses to settle: their options are refused with one line.
  for (const char* flags : {"--beam 1 --phone-lm-weight 2", "--stream --beam 1 --phone-bonus 1",
                            "--beam 1 --phone-lm none --max-delay 1"}) {
    const CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' " + flags + " '" + a + "'");
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("needs a") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  const CommandResult bad =
      run_tool(tmp, "lt-asr", "-m '" + model + "' --phone-lm '" + tmp.file("missing.arpa") + "' '" + a + "'");
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("missing.arpa") != std::string::npos);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
  CHECK(bad.out.empty());
}

TEST_CASE("lt-asr transcribes with a Bi-LSTM model offline and refuses it in one line with --stream") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  SpeechModel m = random_bilstm_speech_model(rng, 64, seed, kPhoneClasses);
  const std::string model = tmp.file("bilstm.safetensors");
  m.model->save(model, m.frontend.metadata(), m.frontend.tensors());
  const std::string a = tmp.file("a.wav");
  write_float_wav(a, test_audio(rng, 1.5));
  for (const std::string flags : {"--beam 1", "--beam 8", "--beam 8 --phone-lm none"}) {
    const CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' -q " + flags + " '" + a + "'");
    INFO(flags << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind(a + "\t", 0) == 0);
    CHECK(phones_of(r.out).size() > 1);
  }
  const CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' --stream '" + a + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("causal-linear") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
}

TEST_CASE("lt-asr refuses float samples far beyond full scale in one line naming the file, whatever decodes them") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::string model = save_model(tmp, "c.safetensors", Direction::causal, seed);
  std::vector<float> x = test_audio(rng, 1.0);
  const size_t at = size_t(rng.integer(0, int64_t(x.size()) - 1));
  x[at] = rng.uniform() < 0 ? -3e38f : 3e38f;
  const std::string huge = tmp.file("huge.wav");
  write_float_wav(huge, x, 22050);  // resampled: the check comes before the resampler
  for (const std::string flags : {"", "--beam 1", "--phone-lm none", "--stream", "--stream --beam 1"}) {
    const CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' -q " + flags + " '" + huge + "'");
    INFO(flags << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.rfind("lt-asr: " + huge + ": sample " + std::to_string(at) + " is ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    // A stream has printed the phones that settled before the sample.
    if (flags.find("--stream") == std::string::npos) CHECK(r.out.empty());
  }
}

TEST_CASE("lt-asr: a phone or word model that cannot decode anything is one line naming its file, before any input") {
  TempDir tmp;
  const uint64_t seed = fresh_seed();
  const std::string model = save_model(tmp, "c.safetensors", Direction::causal, seed);
  Rng rng(seed);
  const std::string a = tmp.file("a.wav");
  write_float_wav(a, test_audio(rng, 1.0));
  // Words where phones should be, and no <unk>: no phone is in the model.
  const std::string words = tmp.file("words.arpa");
  write_text(words, "\\data\\\nngram 1=3\n\n\\1-grams:\n-99 <s>\n-0.5 </s>\n-0.1 HELLO\n\n\\end\\\n");
  const std::string lexicon = tmp.file("lexicon.txt");
  write_text(lexicon, "GOODBYE G UH D B AY\n");
  for (const std::string& flags : {"--beam 8 --phone-lm '" + words + "'",
                                   "--phone-lm none --words --lexicon '" + lexicon + "' --lm '" + words + "'"}) {
    for (const char* mode : {"", "--stream "}) {
      const CommandResult r = run_tool(tmp, "lt-asr", "-m '" + model + "' " + mode + flags + " '" + a + "'");
      INFO(mode << flags << ": " << r.err);
      CHECK(r.exit_code == 1);
      CHECK(r.err.rfind("lt-asr: " + words + ": no word of the lexicon", 0) == 0);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      CHECK(r.out.empty());
    }
  }
}
