// The program cache: a group's chosen, checked program kept on disk, so that a warm compile
// does no search at all (no saturation, no checks, no measurement look-ups) and the issue's
// "later runs start in under a second plus load time" holds.
//
// Key: XXH3-128 of everything that decides the result: this cache's format version, the chunk
// graph (its text and its terms), the text of every rule file and of the schedule, the target's
// name and capabilities, the measurer's fingerprint (machine, compiler and flags, threads), the
// dims and the search options (check dims, limits, budget, seed). The measurements themselves
// are not in it: they are what a cold search decides by, and a cached program stays correct
// when they are cleared.
//
// File: <measurement cache of the target>/group-<32 hex digits of the key>.program:
//   kiln group program 1
//   key <32 hex digits>
//   <the program's text, compiler/group_program_text.hpp>
//   checksum <32 hex digits: XXH3-128 of everything above>
// An entry is used only when its version, key and checksum match, it parses and reads back as
// itself, and it fits the chunk (its inputs are the chunk's Input nodes with their dtypes, its
// outputs are exactly the chunk's Output nodes); anything else is ignored (said with --verbose)
// and the group is searched again, which rewrites the entry. Bump the version whenever a change
// to kiln can change what a stored program means or which program the search would choose.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "compiler/chunk_graph.hpp"
#include "compiler/group_program.hpp"
#include "compiler/measure.hpp"
#include "compiler/search.hpp"
#include "runtime/target.hpp"
#include "support/hash.hpp"

namespace kiln::compiler {

// The key described above; nullopt when a rule file cannot be read (then nothing is cached).
std::optional<support::Hash128> group_program_key(const ChunkGraph& chunk,
                                                  const runtime::Target& target,
                                                  const std::string& fingerprint,
                                                  const SearchOptions& options);

// The program stored in `file` under `key`, or nullopt with the reason in `why` (no file, a
// stale or corrupt one, one that does not fit `chunk`). Never throws for a bad file.
std::optional<GroupProgram> read_group_program(const std::filesystem::path& file,
                                               const support::Hash128& key,
                                               const ChunkGraph& chunk, std::string& why);

// Stores `program` under `key` in `file` (atomically: support/cache_files.hpp).
void write_group_program(const std::filesystem::path& file, const support::Hash128& key,
                         const GroupProgram& program);

// search_group, through the cache: the stored program when there is a good one (its report
// marked from_cache), else the search's, then stored. SearchOptions::program_cache false: the
// search always runs, and its result is stored.
GroupProgram search_group_cached(const ChunkGraph& chunk, runtime::Target& target,
                                 Measurer& measurer, const SearchOptions& options);

}  // namespace kiln::compiler
