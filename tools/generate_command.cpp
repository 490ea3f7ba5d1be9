// `kiln generate --model FILE.gguf --prompt TEXT`: loads a LLaMA GGUF model and its tokenizer,
// compiles the decoder for a target with the search (the first run measures, with progress;
// later runs read each group's program from the program cache) or, with --one-op, lowers it one
// kernel per op; quantized matrices are bound as their blocks where the target multiplies by
// blocks, f32 weights as the mapped bytes, the rest dequantized to f32 at load time. Prefills the prompt in one step and decodes with
// the KV cache, streaming the text as it is generated, then prints prefill and decode tokens/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/bpe_tokenizer.hpp"
#include "model/chat_template.hpp"
#include "model/generate.hpp"
#include "model/gguf.hpp"
#include "support/diagnostic.hpp"
#include "targets/registry.hpp"
#include "tools/commands.hpp"
#include "tools/llama_program.hpp"

namespace kiln::tools {

namespace {

struct GenerateOptions {
  std::string model;
  std::string prompt;
  std::int64_t tokens = 64;
  double temperature = 0.0;
  std::int64_t top_k = 40;
  std::uint64_t seed = 1;
  bool chat = false;
  bool one_op = false;
  bool dequantize = false;
  bool profile = false;
  bool ignore_eos = false;
  bool quiet = false;
  std::int64_t context = 2048;
  std::string target = "cpu";
  int threads = 0;
};

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One more decode step, timed step by step: the total, the share of library calls and
// kernels, and the slowest steps (on stderr).
void print_profile(LlamaProgram& program, const std::vector<std::int32_t>& prompt,
                   const model::Generation& result) {
  const std::int32_t token = result.tokens.empty() ? prompt.back() : result.tokens.back();
  const auto pos = static_cast<std::int64_t>(prompt.size() + result.tokens.size()) - 1;
  runtime::RunProfile profile;
  program.step(std::span<const std::int32_t>(&token, 1), pos, &profile);
  double steps_total = 0.0;
  std::map<std::string, std::pair<double, int>> by_kind;  // the label's first word
  for (const runtime::StepTime& s : profile.steps) {
    steps_total += s.seconds;
    // "%12 SumReduce as quantized gemm": by what the step is, not by its node.
    auto& [seconds, count] = by_kind[s.label.substr(s.label.find(' ') + 1)];
    seconds += s.seconds;
    ++count;
  }
  std::fprintf(stderr, "profile of one decode step: %.3f ms, %zu steps (%.3f ms in steps)\n",
               profile.total_seconds * 1e3, profile.steps.size(), steps_total * 1e3);
  for (const auto& [kind, v] : by_kind) {
    std::fprintf(stderr, "  %4d steps %9.3f ms  %s\n", v.second, v.first * 1e3,
                 kind.substr(0, 90).c_str());
  }
  std::vector<runtime::StepTime> slowest = profile.steps;
  std::stable_sort(slowest.begin(), slowest.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  slowest.resize(std::min<std::size_t>(slowest.size(), 12));
  for (const runtime::StepTime& s : slowest) {
    std::fprintf(stderr, "  %9.3f ms  %s\n", s.seconds * 1e3, s.label.substr(0, 100).c_str());
  }
}

int run_generate(const GenerateOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const model::GgufFile file(o.model);
  const model::Gguf& g = file.gguf();
  const model::BpeTokenizer tokenizer = model::BpeTokenizer::from_gguf(g);
  const std::string text = o.chat ? model::chat_prompt(g, o.prompt) : o.prompt;
  const std::vector<std::int32_t> prompt = tokenizer.encode(text);
  if (prompt.empty()) throw support::UserError("--prompt: the prompt has no tokens");
  const std::int64_t context =
      std::min(o.context, g.optional_integer("llama.context_length").value_or(o.context));
  if (static_cast<std::int64_t>(prompt.size()) + o.tokens > context) {
    throw support::UserError("--prompt and -n: " + std::to_string(prompt.size()) + " + " +
                             std::to_string(o.tokens) + " tokens do not fit a context of " +
                             std::to_string(context) + " (--context)");
  }
  std::unique_ptr<runtime::Target> target = targets::make_target(o.target);
  const int threads = target->set_threads(o.threads);
  // Weights stay blocks where the target multiplies by blocks (its library has gemm-<format>).
  const std::vector<std::string>& ops = target->capabilities().library_ops;
  const bool block_products = std::any_of(ops.begin(), ops.end(), [](const std::string& op) {
    return op.rfind("gemm-", 0) == 0;
  });
  LlamaProgram program(file, context, *target,
                       {!o.one_op, !o.quiet, threads, !o.one_op && !o.dequantize && block_products});
  const auto& c = program.config();
  std::cerr << "model " << c.name << ": " << c.layers << " layers, hidden " << c.hidden << ", "
            << c.heads << "/" << c.kv_heads << " heads, vocab " << c.vocab << ", "
            << (c.tied_embeddings ? "tied" : "separate") << " output; " << program.steps()
            << " steps on " << o.target << " (" << threads << " threads, "
            << (o.one_op ? "one kernel per op" : "searched") << ", "
            << program.quantized_weights() << " weights read as quantized blocks); ready in "
            << since(start)
            << " s";
  if (!o.one_op) {
    std::cerr << " (compile " << program.compile_seconds() << " s; " << program.in_place_steps()
              << " steps in place, " << 2 * c.layers << " cache writes)";
  }
  std::cerr << "\n";
  std::cerr << "prompt: " << prompt.size() << " tokens\n";

  model::Sampler sampler(o.temperature, o.top_k, o.seed);
  std::vector<std::int32_t> stop;
  if (tokenizer.vocabulary().eos && !o.ignore_eos) stop.push_back(*tokenizer.vocabulary().eos);
  const model::Generation result = model::generate(
      prompt, [&](std::span<const std::int32_t> t, std::int64_t pos) { return program.step(t, pos); },
      sampler, o.tokens, stop, [&](std::int32_t token) {
        std::cout << tokenizer.decode(token) << std::flush;
      });
  std::cout << "\n\n";
  std::printf("prefill: %zu tokens in %.3f s (%.1f tokens/s)\n", prompt.size(),
              result.prefill_seconds, static_cast<double>(prompt.size()) / result.prefill_seconds);
  if (result.decode_steps > 0) {
    std::printf("decode: %lld tokens in %.3f s (%.1f tokens/s)%s\n",
                static_cast<long long>(result.decode_steps), result.decode_seconds,
                static_cast<double>(result.decode_steps) / result.decode_seconds,
                result.stopped ? ", stopped at the end-of-text token" : "");
  }
  if (o.profile) print_profile(program, prompt, result);
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate text with a LLaMA model from a GGUF file (one kernel per op)");
  cmd->add_option("--model", o->model, "The model, a GGUF file (general.architecture llama)")
      ->required();
  cmd->add_option("--prompt", o->prompt, "The prompt text")->required();
  cmd->add_option("-n,--tokens", o->tokens, "Most tokens to generate (default 64)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  cmd->add_option("--temperature", o->temperature, "0 (default) is greedy");
  cmd->add_option("--top-k", o->top_k, "Sample among the k most likely tokens (default 40; 0: all)");
  cmd->add_option("--seed", o->seed, "Seed of the sampler (default 1)");
  cmd->add_flag("--chat", o->chat, "Wrap the prompt in the model's chat template (ChatML)");
  cmd->add_flag("--one-op", o->one_op,
                "One kernel per op, no search (the baseline; weights dequantized to f32)");
  cmd->add_flag("--dequantize", o->dequantize,
                "Dequantize every weight to f32 when loading, instead of reading its blocks");
  cmd->add_flag("--ignore-eos", o->ignore_eos,
                "Go on past the end-of-text token (for timing exactly -n tokens)");
  cmd->add_flag("--quiet", o->quiet, "No search progress");
  cmd->add_flag("--profile", o->profile,
                "Then time one more decode step step by step (on stderr)");
  cmd->add_option("--context", o->context,
                  "KV cache positions (default 2048, at most the model's context)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--target", o->target, "cpu (default) or reference");
  cmd->add_option("--threads", o->threads,
                  "Threads for kernels and library calls (default: all cores)")
      ->check(CLI::Range(0, 1 << 20));
  return {cmd, [o] { return run_generate(*o); }};
}

}  // namespace kiln::tools
