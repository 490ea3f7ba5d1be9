// The e-graph database: sorts, one table per function, one union-find, and a clock. Its API keeps
// the invariants: keys are canonicalized on write, merges run on conflicts, and rebuild()
// restores canonical rows and congruence. Every row records which rule created it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/function.hpp"
#include "engine/primitive.hpp"
#include "engine/sort.hpp"
#include "engine/table.hpp"
#include "engine/union_find.hpp"

namespace kiln::engine {

class EGraph {
 public:
  EGraph();

  // --- schema ---
  SortId add_sort(Sort sort);
  std::optional<SortId> find_sort(const std::string& name) const;
  const Sort& sort(SortId id) const { return sorts_[id]; }
  std::size_t num_sorts() const { return sorts_.size(); }
  bool is_eq(SortId id) const { return sorts_[id].is_eq; }

  FunctionId add_function(FunctionDecl decl);
  std::optional<FunctionId> find_function(const std::string& name) const;
  const FunctionDecl& function(FunctionId id) const { return functions_[id].decl; }
  std::size_t num_functions() const { return functions_.size(); }
  Table& table(FunctionId id) { return functions_[id].table; }
  const Table& table(FunctionId id) const { return functions_[id].table; }

  PrimitiveTable& primitives() { return *primitives_; }
  // False for a primitive of a sort that a `pop` removed (see Primitive::owner), or declared
  // by a `(primitive ...)` that a `pop` undid.
  bool is_live(const Primitive& p) const {
    if (p.declared) return std::find(declared_.begin(), declared_.end(), &p) != declared_.end();
    return p.owner == nullptr ||
           (p.owner_id < sorts_.size() && sorts_[p.owner_id].primitive.get() == p.owner);
  }
  // Whether a live primitive has this name.
  bool has_primitive(const std::string& name) const {
    const std::vector<const Primitive*>& overloads = primitives_->overloads(name);
    return std::any_of(overloads.begin(), overloads.end(), [&](const Primitive* p) { return is_live(*p); });
  }
  // Adds a program's `(primitive ...)` (Primitive::declared) to the table and makes it live.
  const Primitive& declare_primitive(Primitive primitive) {
    primitive.declared = true;
    const Primitive& added = primitives_->add(std::move(primitive));
    declared_.push_back(&added);
    return added;
  }
  const PrimitiveTable& primitives() const { return *primitives_; }

  // --- e-classes ---
  Value make_class() { ++version_; return union_find_.make_set(); }
  // The class of an id as actions see it (see UnionFind: while a rule iteration applies its
  // matches, as it was when the iteration began).
  Value find(Value id) { return union_find_.canonical(id); }
  // Between freeze_classes() and thaw_classes(), find() and every canonicalization keep the
  // classes as they were at the freeze; unions still merge the real classes, and rebuild (after
  // the thaw) brings the rows up to date. Runner::iterate freezes around its rules' actions.
  void freeze_classes() { union_find_.freeze(); }
  void thaw_classes() { union_find_.thaw(); }
  Value find_const(Value id) const { return union_find_.find_const(id); }
  // The canonical form of a value of `sort`: the root of an e-class, a container of e-classes
  // re-interned with canonical elements, any other value itself.
  Value canonical(SortId sort, Value v) {
    const Sort& s = sorts_[sort];
    if (s.is_eq) return find(v);
    return s.holds_eclasses ? canonical_container(*s.container, v) : v;
  }
  // Returns true if the two classes were distinct.
  bool unite(Value a, Value b);

  // --- rows (all writes are stamped with now()) ---
  // Constructor call: the existing output for these keys, or a fresh e-class.
  Value lookup_or_insert(FunctionId f, const Value* keys);
  // Function call: the output for these keys, if there is a row.
  std::optional<Value> lookup(FunctionId f, const Value* keys);
  // Unions `eclass` with constructor f's output for these keys; when there is no such row yet,
  // writes it with `eclass` as its output instead of a fresh class.
  void construct_into(FunctionId f, const Value* keys, Value eclass);
  // Writes `keys -> output`, merging with an existing row by the function's merge rule.
  void set(FunctionId f, const Value* keys, Value output);
  // Removes the row (returns false if absent).
  bool remove(FunctionId f, const Value* keys);
  // Hides the row from matching and extraction (returns false if absent).
  bool subsume(FunctionId f, const Value* keys);

  // Restores canonical keys and outputs everywhere and merges rows that became equal,
  // to a fixpoint. Throws support::UserError if a :no-merge function meets a conflict.
  void rebuild();

  // --- time and change ---
  Timestamp now() const { return now_; }
  void advance_time() { ++now_; }
  // Searches see every table as it is now until clear_horizons(), while rows are appended
  // (see Table::set_horizon).
  void set_horizons() {
    for (FunctionEntry& f : functions_) f.table.set_horizon();
  }
  void clear_horizons() {
    for (FunctionEntry& f : functions_) f.table.clear_horizon();
  }
  // Changes whenever a row, flag or class changes; "did this iteration do anything?".
  std::uint64_t version() const { return version_; }
  // Total live rows over all tables.
  std::size_t total_rows() const;

  // --- provenance: which rule created each row ---
  // While a rule's actions run, the runner names the rule as the current origin, and every row
  // they create (lookup_or_insert, set) records it; with none current (top-level commands) rows
  // record kNoOrigin. Merges and unions are not attributed: a row that a custom merge or
  // rebuild() re-writes keeps the origin of the row it replaces, and a row merged into an
  // existing one leaves that one's origin. Part of the e-graph, so push/pop copies keep it.

  // The id of a rule name (interned once; ids are dense and never reused).
  OriginId intern_origin(const std::string& rule_name);
  const std::string& origin_name(OriginId id) const { return origin_names_[id]; }
  // Rows created from now on record `origin` (kNoOrigin: none). Set by the runner.
  void set_current_origin(OriginId origin) { current_origin_ = origin; }
  OriginId current_origin() const { return current_origin_; }
  // The name of the rule that created row `row` of function f; nullopt if no rule did.
  std::optional<std::string> row_origin(FunctionId f, RowId row) const;
  // The sorted distinct names of the rules that created a live row (subsumed ones included)
  // whose output is in e-class `eclass` of `sort`: the rules whose rewrites put e-nodes there.
  // Scans every table with that output sort: for debugging and reports, not for rules.
  std::vector<std::string> rules_in_eclass(SortId sort, Value eclass) const;

 private:
  struct FunctionEntry {
    FunctionDecl decl;
    Table table;
    // Per column (keys..., output): kPlainColumn, kClassColumn (e-class ids) or kContainerColumn
    // (containers of e-classes); rebuild visits tables with any non-plain column.
    std::vector<std::uint8_t> eq_columns;
    std::vector<SortId> column_sorts;
    bool has_eq_columns = false;
  };
  static constexpr std::uint8_t kPlainColumn = 0, kClassColumn = 1, kContainerColumn = 2;

  Value canonical_container(const ContainerSort& sort, Value v);
  Value canonical_cell(const FunctionEntry& f, std::size_t column, Value v) {
    std::uint8_t kind = f.eq_columns[column];
    if (kind == kClassColumn) return union_find_.canonical(v);
    return kind == kPlainColumn ? v : canonical(f.column_sorts[column], v);
  }

  // Canonicalizes keys_in into keys and returns the live row holding them (or kNoRow).
  RowId find_row(const FunctionEntry& f, const Value* keys_in, Value* keys,
                 std::uint64_t* hash = nullptr);
  // Inserts a canonical row created by `origin`, or merges it into row r that holds the same
  // keys (kNoRow: none). Used by set() and rebuild().
  void write_row(FunctionEntry& f, RowId r, const Value* keys, std::uint64_t hash, Value output,
                 bool subsumed,
                 OriginId origin);
  bool rebuild_pass();

  // rebuild_pass's buffers, kept between passes so that a large rebuild reuses its pages
  // instead of faulting in fresh ones every time. Scratch: a copy of the e-graph starts empty.
  struct RebuildScratch {
    HugePageVector<RowId> stale;
    HugePageVector<std::uint64_t> hashes;  // per stale row: its keys' hash, for kill and prefetch
    // The stale rows taken out of a table that is compacted before they go back (see there).
    HugePageVector<Value> cells;
    HugePageVector<std::uint8_t> subsumed;
    HugePageVector<OriginId> origins;
    RebuildScratch() = default;
    RebuildScratch(const RebuildScratch&) {}
    RebuildScratch& operator=(const RebuildScratch&) { return *this; }
  };

  std::vector<Sort> sorts_;
  std::map<std::string, SortId> sort_by_name_;
  std::vector<FunctionEntry> functions_;
  std::map<std::string, FunctionId> function_by_name_;
  std::shared_ptr<PrimitiveTable> primitives_;  // shared across push/pop copies
  std::vector<const Primitive*> declared_;      // the live declared primitives (is_live)
  UnionFind union_find_;
  std::uint64_t unions_at_rebuild_ = 0;
  Timestamp now_ = 1;
  std::uint64_t version_ = 0;
  std::vector<std::string> origin_names_;  // by OriginId
  std::map<std::string, OriginId> origin_by_name_;
  OriginId current_origin_ = kNoOrigin;
  RebuildScratch scratch_;
};

}  // namespace kiln::engine
