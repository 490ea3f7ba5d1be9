// The program cache; see group_cache.hpp.
#include "compiler/group_cache.hpp"

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "compiler/group_program_text.hpp"
#include "graph/hlir.hpp"
#include "support/cache_files.hpp"
#include "support/diagnostic.hpp"

namespace kiln::compiler {

namespace {

namespace fs = std::filesystem;
using graph::NodeId;
using graph::Op;

// The first line of every entry, and the first word of every key's text.
constexpr const char* kVersion = "kiln group program 1";

std::optional<std::string> read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

support::Hash128 hash_of(const std::string& text) {
  return support::hash128(text.data(), text.size());
}

// A text appended to the key's, its length first, so two fields can never run into each other.
void add_field(std::string& key, const std::string& name, const std::string& value) {
  key += name + " " + std::to_string(value.size()) + "\n" + value + "\n";
}

template <class T>
std::string optional_text(const std::optional<T>& v) {
  return v ? std::to_string(*v) : std::string("none");
}

// "" when `p` fits `chunk`, else why not.
std::string misfit(const GroupProgram& p, const ChunkGraph& chunk) {
  const graph::Graph& g = chunk.graph;
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    const GroupStep& s = p.steps[k];
    const std::string step = "step " + std::to_string(k);
    if (s.node && *s.node >= g.size()) return step + " computes an unknown node";
    const graph::Body* body = std::get_if<graph::Body>(&s.op);
    for (std::size_t i = 0; i < s.inputs.size(); ++i) {
      const Ref& r = s.inputs[i];
      if (r.kind != Ref::Kind::Input) continue;
      if (r.index >= g.size() || g.node(r.index).op != Op::Input) {
        return step + " reads %" + std::to_string(r.index) + ", not an input of the chunk";
      }
      if (body && body->inputs()[i] != g.node(r.index).dtype) {
        return step + " reads %" + std::to_string(r.index) + " as another dtype";
      }
    }
  }
  std::set<NodeId> outputs;
  for (NodeId id = 0; id < g.size(); ++id) {
    if (g.node(id).op == Op::Output) outputs.insert(id);
  }
  std::set<NodeId> given;
  for (const auto& [node, value] : p.outputs) {
    given.insert(node);
    if (value.kind == Ref::Kind::Input &&
        (value.index >= g.size() || g.node(value.index).op != Op::Input)) {
      return "output %" + std::to_string(node) + " is an unknown input";
    }
  }
  if (given != outputs) return "its outputs are not the chunk's";
  return "";
}

}  // namespace

std::optional<support::Hash128> group_program_key(const ChunkGraph& chunk,
                                                  const runtime::Target& target,
                                                  const std::string& fingerprint,
                                                  const SearchOptions& options) {
  std::string key = std::string(kVersion) + "\n";
  add_field(key, "target", target.name());
  std::string capabilities;
  const runtime::Capabilities& caps = target.capabilities();
  for (graph::DType t : caps.dtypes) capabilities += std::string(graph::dtype_name(t)) + " ";
  capabilities += "|";
  for (const std::string& op : caps.library_ops) capabilities += op + " ";
  capabilities += "| host_memory " + std::to_string(caps.host_memory) + " survives_fork " +
                  std::to_string(caps.survives_fork);
  add_field(key, "capabilities", capabilities);
  add_field(key, "fingerprint", fingerprint);
  std::string dims;
  for (const auto& [name, value] : options.dims) dims += name + "=" + std::to_string(value) + " ";
  add_field(key, "dims", dims);
  const engine::RunLimits& l = options.limits;
  add_field(key, "search",
            "check_dim_cap " + std::to_string(options.check_dim_cap) + " max_iterations " +
                optional_text(l.max_iterations) + " max_rows " + optional_text(l.max_rows) +
                " max_seconds " + optional_text(l.max_seconds) + " match_limit " +
                optional_text(l.match_limit) + " ban_length " + std::to_string(l.ban_length) +
                " max_measurements " + std::to_string(options.max_measurements) +
                " measure_top " + std::to_string(options.measure_top) + " seed " +
                std::to_string(options.seed));
  for (const fs::path& file : options.rule_files) {
    std::optional<std::string> text = read_text(file);
    if (!text) return std::nullopt;
    add_field(key, "rules", *text);
  }
  for (const fs::path& layer : {options.pipeline, options.schedules}) {
    if (layer.empty()) continue;
    std::optional<std::string> text = read_text(layer);
    if (!text) return std::nullopt;
    add_field(key, "pipeline", *text);
  }
  add_field(key, "chunk", graph::to_text(chunk.graph));
  add_field(key, "terms", graph::to_egglog(chunk.graph));
  return hash_of(key);
}

std::optional<GroupProgram> read_group_program(const fs::path& file, const support::Hash128& key,
                                               const ChunkGraph& chunk, std::string& why) {
  std::optional<std::string> text = read_text(file);
  if (!text) {
    why = "no entry";
    return std::nullopt;
  }
  const std::string head = std::string(kVersion) + "\nkey " + Measurer::hex(key) + "\n";
  if (text->compare(0, head.size(), head) != 0) {
    why = "another version or key";
    return std::nullopt;
  }
  // The checksum line: the last one.
  const std::size_t last = text->size() < 2 ? std::string::npos : text->rfind('\n', text->size() - 2);
  if (text->back() != '\n' || last == std::string::npos || last + 1 < head.size() ||
      text->compare(last + 1, std::string::npos,
                    "checksum " + Measurer::hex(hash_of(text->substr(0, last + 1))) + "\n") != 0) {
    why = "its checksum does not match (a corrupt or truncated file)";
    return std::nullopt;
  }
  try {
    GroupProgram p = parse_group_program(
        std::string_view(*text).substr(head.size(), last + 1 - head.size()), file.string());
    if (std::string bad = misfit(p, chunk); !bad.empty()) {
      why = "it does not fit the chunk: " + bad;
      return std::nullopt;
    }
    p.report.from_cache = true;
    return p;
  } catch (const std::exception& e) {  // a parse error, or a Body the builder refuses
    why = e.what();
    return std::nullopt;
  }
}

void write_group_program(const fs::path& file, const support::Hash128& key,
                         const GroupProgram& program) {
  std::string text = std::string(kVersion) + "\nkey " + Measurer::hex(key) + "\n" +
                     to_text(program);
  text += "checksum " + Measurer::hex(hash_of(text)) + "\n";
  support::write_file_atomically(file, text);
}

GroupProgram search_group_cached(const ChunkGraph& chunk, runtime::Target& target,
                                 Measurer& measurer, const SearchOptions& options) {
  const std::optional<support::Hash128> key =
      group_program_key(chunk, target, measurer.fingerprint(), options);
  if (!key) return search_group(chunk, target, measurer, options);
  const fs::path file = measurer.cache_dir() / ("group-" + Measurer::hex(*key) + ".program");
  if (options.program_cache) {
    std::string why;
    if (std::optional<GroupProgram> cached = read_group_program(file, *key, chunk, why)) {
      return *cached;
    }
    if (options.verbose && why != "no entry") {
      std::cerr << "  ignoring the program cache entry " << file.string() << ": " << why << "\n";
    }
  }
  GroupProgram program = search_group(chunk, target, measurer, options);
  write_group_program(file, *key, program);
  return program;
}

}  // namespace kiln::compiler
