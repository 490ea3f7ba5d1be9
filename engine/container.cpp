#include "engine/container.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "engine/egraph.hpp"
#include "support/hash.hpp"

namespace kiln::engine {

namespace {

using i64 = std::int64_t;
using Items = std::vector<Value>;

// Sorts key/value pairs by key, keeping the last value given for a key.
Items normalize_map(const Items& items) {
  std::map<Value, Value> entries;
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) entries[items[i]] = items[i + 1];
  Items out;
  out.reserve(entries.size() * 2);
  for (const auto& [k, v] : entries) {
    out.push_back(k);
    out.push_back(v);
  }
  return out;
}

// Checks index `i` against `size`, saying why when it is out of range.
bool index_ok(i64 i, std::size_t size) {
  if (i >= 0 && static_cast<std::size_t>(i) < size) return true;
  primitive_failure_reason() = "index " + std::to_string(i) + " is out of range for " +
                               std::to_string(size) + " element(s)";
  return false;
}

// Index of key `k` in a normalized map's items, or npos.
std::size_t map_find(const Items& items, Value k) {
  for (std::size_t lo = 0, hi = items.size() / 2; lo < hi;) {
    std::size_t mid = (lo + hi) / 2;
    if (items[2 * mid] == k) return 2 * mid;
    if (items[2 * mid] < k) lo = mid + 1;
    else hi = mid;
  }
  return static_cast<std::size_t>(-1);
}

// Registers the primitives of one container sort. Every closure holds the sort, whose intern
// table outlives all e-graph copies.
class ContainerPrimitives {
 public:
  ContainerPrimitives(PrimitiveTable& table, const Builtins& b, SortId self,
                      std::shared_ptr<const ContainerSort> sort)
      : table_(table), b_(b), self_(self), sort_(std::move(sort)) {}

  void add(const std::string& name, std::vector<SortId> inputs, SortId output, PrimitiveFn fn,
           bool variadic = false) {
    table_.add(Primitive{name, std::move(inputs), output, variadic, std::move(fn), sort_.get(), self_});
  }

  // f(items of args[0], args, result items) -> false on failure; the result is a container.
  template <class Op>
  PrimitiveFn to_self(Op op) const {
    auto sort = sort_;
    return [sort, op](const Value* a, std::size_t n, Value& r) {
      Items out;
      if (!op(*sort, a, n, out)) return false;
      r = sort->make(std::move(out));
      return true;
    };
  }

  void vec() {
    SortId t = sort_->params()[0];
    auto sort = sort_;
    add("vec-empty", {}, self_, to_self([](const ContainerSort&, const Value*, std::size_t, Items&) { return true; }));
    add("vec-of", {t}, self_, to_self([](const ContainerSort&, const Value* a, std::size_t n, Items& out) {
          out.assign(a, a + n);
          return true;
        }), true);
    add("vec-append", {self_}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t n, Items& out) {
          for (std::size_t i = 0; i < n; ++i) {
            const Items& part = s.items(a[i]);
            out.insert(out.end(), part.begin(), part.end());
          }
          return true;
        }), true);
    add("vec-push", {self_, t}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          out.push_back(a[1]);
          return true;
        }));
    add("vec-pop", {self_}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          if (!out.empty()) out.pop_back();
          return true;
        }));
    add("vec-get", {self_, b_.i64}, t, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      i64 i = I64Sort::get(a[1]);
      if (!index_ok(i, items.size())) return false;
      r = items[static_cast<std::size_t>(i)];
      return true;
    });
    add("vec-set", {self_, b_.i64, t}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          i64 i = I64Sort::get(a[1]);
          if (!index_ok(i, out.size())) return false;
          out[static_cast<std::size_t>(i)] = a[2];
          return true;
        }));
    add("vec-remove", {self_, b_.i64}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          i64 i = I64Sort::get(a[1]);
          if (!index_ok(i, out.size())) return false;
          out.erase(out.begin() + i);
          return true;
        }));
    add("vec-length", {self_}, b_.i64, [sort](const Value* a, std::size_t, Value& r) {
      r = I64Sort::make(static_cast<i64>(sort->items(a[0]).size()));
      return true;
    });
    add("vec-contains", {self_, t}, b_.unit, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      r = 0;
      return std::find(items.begin(), items.end(), a[1]) != items.end();
    });
    add("vec-not-contains", {self_, t}, b_.unit, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      r = 0;
      return std::find(items.begin(), items.end(), a[1]) == items.end();
    });
    if (t == b_.i64) {
      add("vec-range", {b_.i64}, self_, to_self([](const ContainerSort&, const Value* a, std::size_t, Items& out) {
            for (i64 i = 0, n = I64Sort::get(a[0]); i < n; ++i) out.push_back(I64Sort::make(i));
            return true;
          }));
    }
  }

  // Set and MultiSet share their membership primitives; `prefix` is set- or multiset-.
  void membership(const std::string& prefix, SortId t) {
    auto sort = sort_;
    add(prefix + "contains", {self_, t}, b_.unit, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      r = 0;
      return std::binary_search(items.begin(), items.end(), a[1]);
    });
    add(prefix + "not-contains", {self_, t}, b_.unit, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      r = 0;
      return !std::binary_search(items.begin(), items.end(), a[1]);
    });
    add(prefix + "length", {self_}, b_.i64, [sort](const Value* a, std::size_t, Value& r) {
      r = I64Sort::make(static_cast<i64>(sort->items(a[0]).size()));
      return true;
    });
    add(prefix + "of", {t}, self_, to_self([](const ContainerSort&, const Value* a, std::size_t n, Items& out) {
          out.assign(a, a + n);
          return true;
        }), true);
    add(prefix + "insert", {self_, t}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          out.push_back(a[1]);
          return true;
        }));
  }

  void set() {
    SortId t = sort_->params()[0];
    auto sort = sort_;
    membership("set-", t);
    add("set-empty", {}, self_, to_self([](const ContainerSort&, const Value*, std::size_t, Items&) { return true; }));
    add("set-remove", {self_, t}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          out.erase(std::remove(out.begin(), out.end(), a[1]), out.end());
          return true;
        }));
    add("set-get", {self_, b_.i64}, t, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      i64 i = I64Sort::get(a[1]);
      if (!index_ok(i, items.size())) return false;
      r = items[static_cast<std::size_t>(i)];
      return true;
    });
    auto combine = [&](const char* name, auto op) {
      add(name, {self_, self_}, self_, to_self([op](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
            const Items& x = s.items(a[0]);
            const Items& y = s.items(a[1]);
            op(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out));
            return true;
          }));
    };
    combine("set-union", [](auto... args) { std::set_union(args...); });
    combine("set-diff", [](auto... args) { std::set_difference(args...); });
    combine("set-intersect", [](auto... args) { std::set_intersection(args...); });
  }

  void multiset() {
    SortId t = sort_->params()[0];
    auto sort = sort_;
    membership("multiset-", t);
    // Removes one occurrence; fails when there is none.
    add("multiset-remove", {self_, t}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          auto at = std::lower_bound(out.begin(), out.end(), a[1]);
          if (at == out.end() || *at != a[1]) return false;
          out.erase(at);
          return true;
        }));
    add("multiset-count", {self_, t}, b_.i64, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      auto [lo, hi] = std::equal_range(items.begin(), items.end(), a[1]);
      r = I64Sort::make(static_cast<i64>(hi - lo));
      return true;
    });
    add("multiset-single", {t, b_.i64}, self_, to_self([](const ContainerSort&, const Value* a, std::size_t, Items& out) {
          i64 n = I64Sort::get(a[1]);
          if (n < 0) return false;
          out.assign(static_cast<std::size_t>(n), a[0]);
          return true;
        }));
    // pick: the first element in value order; pick-max: the last.
    add("multiset-pick", {self_}, t, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      if (items.empty()) return false;
      r = items.front();
      return true;
    });
    add("multiset-pick-max", {self_}, t, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      if (items.empty()) return false;
      r = items.back();
      return true;
    });
    add("multiset-sum", {self_, self_}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          const Items& x = s.items(a[0]);
          const Items& y = s.items(a[1]);
          std::merge(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out));
          return true;
        }));
    add("multiset-intersection", {self_, self_}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          const Items& x = s.items(a[0]);
          const Items& y = s.items(a[1]);
          std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out));
          return true;
        }));
    // Fails unless the second multiset is contained in the first.
    add("multiset-subtract", {self_, self_}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          const Items& x = s.items(a[0]);
          const Items& y = s.items(a[1]);
          if (!std::includes(x.begin(), x.end(), y.begin(), y.end())) return false;
          std::set_difference(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out));
          return true;
        }));
    // Argument-swapped forms (egglog's Python layer registers them for partial application).
    add("multiset-remove-swapped", {t, self_}, self_, swapped("multiset-remove"));
    add("multiset-subtract-swapped", {self_, self_}, self_, swapped("multiset-subtract"));
    add("multiset-contains-swapped", {t, self_}, b_.unit, swapped("multiset-contains"));
    add("multiset-not-contains-swapped", {t, self_}, b_.unit, swapped("multiset-not-contains"));
    add("multiset-reset-counts", {self_}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          out.erase(std::unique(out.begin(), out.end()), out.end());
          return true;
        }));
  }

  // The primitive `name` of this sort with its two arguments swapped (registered before).
  PrimitiveFn swapped(const std::string& name) const {
    PrimitiveFn fn;
    for (const Primitive* p : table_.overloads(name)) {
      if (p->owner == sort_.get()) fn = p->apply;
    }
    return [fn](const Value* a, std::size_t, Value& r) {
      Value args[] = {a[1], a[0]};
      return fn(args, 2, r);
    };
  }

  void map() {
    SortId k = sort_->params()[0], v = sort_->params()[1];
    auto sort = sort_;
    add("map-empty", {}, self_, to_self([](const ContainerSort&, const Value*, std::size_t, Items&) { return true; }));
    add("map-insert", {self_, k, v}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          out.push_back(a[1]);
          out.push_back(a[2]);
          return true;
        }));
    add("map-get", {self_, k}, v, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      std::size_t at = map_find(items, a[1]);
      if (at == static_cast<std::size_t>(-1)) {
        primitive_failure_reason() = "the key is not in the map";
        return false;
      }
      r = items[at + 1];
      return true;
    });
    add("map-contains", {self_, k}, b_.unit, [sort](const Value* a, std::size_t, Value& r) {
      r = 0;
      return map_find(sort->items(a[0]), a[1]) != static_cast<std::size_t>(-1);
    });
    add("map-not-contains", {self_, k}, b_.unit, [sort](const Value* a, std::size_t, Value& r) {
      r = 0;
      return map_find(sort->items(a[0]), a[1]) == static_cast<std::size_t>(-1);
    });
    add("map-remove", {self_, k}, self_, to_self([](const ContainerSort& s, const Value* a, std::size_t, Items& out) {
          out = s.items(a[0]);
          std::size_t at = map_find(out, a[1]);
          if (at != static_cast<std::size_t>(-1)) out.erase(out.begin() + static_cast<std::ptrdiff_t>(at), out.begin() + static_cast<std::ptrdiff_t>(at) + 2);
          return true;
        }));
    add("map-length", {self_}, b_.i64, [sort](const Value* a, std::size_t, Value& r) {
      r = I64Sort::make(static_cast<i64>(sort->items(a[0]).size() / 2));
      return true;
    });
  }

  void pair() {
    SortId l = sort_->params()[0], r = sort_->params()[1];
    auto sort = sort_;
    add("pair", {l, r}, self_, to_self([](const ContainerSort&, const Value* a, std::size_t, Items& out) {
          out.assign(a, a + 2);
          return true;
        }));
    add("pair-first", {self_}, l, [sort](const Value* a, std::size_t, Value& out) {
      out = sort->items(a[0])[0];
      return true;
    });
    add("pair-second", {self_}, r, [sort](const Value* a, std::size_t, Value& out) {
      out = sort->items(a[0])[1];
      return true;
    });
  }

  void maybe() {
    SortId t = sort_->params()[0];
    auto sort = sort_;
    add("maybe-none", {}, self_, to_self([](const ContainerSort&, const Value*, std::size_t, Items&) { return true; }));
    add("maybe-some", {t}, self_, to_self([](const ContainerSort&, const Value* a, std::size_t, Items& out) {
          out.assign(a, a + 1);
          return true;
        }));
    add("maybe-unwrap", {self_}, t, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      if (items.empty()) {
        primitive_failure_reason() = "the value is maybe-none";
        return false;
      }
      r = items[0];
      return true;
    });
    add("maybe-unwrap-or", {self_, t}, t, [sort](const Value* a, std::size_t, Value& r) {
      const Items& items = sort->items(a[0]);
      r = items.empty() ? a[1] : items[0];
      return true;
    });
  }

 private:
  PrimitiveTable& table_;
  const Builtins& b_;
  SortId self_;
  std::shared_ptr<const ContainerSort> sort_;
};

// Calls function value `fn` of `sort` with `args` after its partial arguments: a primitive
// directly, a constructor or function through the e-graph of the running action or search.
bool call_function_value(const ContainerSort& sort, Value fn, const Value* given, std::size_t n,
                         Value& r) {
  const std::vector<Value>& items = sort.items(fn);
  const Callable& target = sort.callable(items[0]);
  std::vector<Value> args(items.begin() + 1, items.end());
  args.insert(args.end(), given, given + n);
  if (target.primitive) return target.primitive->apply(args.data(), args.size(), r);
  PrimitiveContext& context = primitive_context();
  std::optional<FunctionId> f =
      context.egraph ? context.egraph->find_function(target.name) : std::nullopt;
  if (!f) {
    primitive_failure_reason() = "function '" + target.name + "' no longer exists";
    return false;
  }
  if (context.may_insert && context.egraph->function(*f).kind == FunctionKind::Constructor) {
    r = context.egraph->lookup_or_insert(*f, args.data());
    return true;
  }
  std::optional<Value> found = context.egraph->lookup(*f, args.data());
  if (!found) {
    primitive_failure_reason() = "'" + target.name + "' has no row for these arguments";
    return false;
  }
  r = *found;
  return true;
}

// The higher-order primitives over container and function-value sorts (and the few others that
// relate two container sorts), registered for every combination of sorts that involves sort
// `added` (just declared): (unstable-vec-map f v), (map-fold-kv f init m), the
// unstable-multiset-* family, (unstable-maybe-match m f default), (unstable-catch f) and
// (multiset-sum-multisets mm).
class HigherOrder {
 public:
  using Shared = std::shared_ptr<const ContainerSort>;

  HigherOrder(EGraph& egraph, const Builtins& b) : egraph_(egraph), b_(b) {}

  void add_all(SortId added) {
    // Every primitive is owned by the newest sort it involves, `added`: a `pop` that removes
    // any of its sorts removes that one (sorts go in the reverse order of their declaration).
    owner_id_ = added;
    owner_ = Shared(egraph_.sort(added).primitive, egraph_.sort(added).container);
    for (SortId fs = 0; fs < egraph_.num_sorts(); ++fs) {
      if (Shared fn = as(fs, ContainerKind::Fn)) {
        for (SortId a = 0; a < egraph_.num_sorts(); ++a) {
          if (fs == added || a == added) with_one_container(fs, fn, a);
          for (SortId c = 0; c < egraph_.num_sorts(); ++c) {
            if (fs == added || a == added || c == added) with_two_containers(fs, fn, a, c);
          }
        }
      }
    }
    for (SortId a = 0; a < egraph_.num_sorts(); ++a) {
      for (SortId c = 0; c < egraph_.num_sorts(); ++c) {
        Shared outer = as(a, ContainerKind::MultiSet), inner = as(c, ContainerKind::MultiSet);
        if ((a == added || c == added) && outer && inner && outer->params()[0] == c) {
          // The sum of a multiset of multisets.
          add("multiset-sum-multisets", {a}, c, [outer, inner](const Value* x, std::size_t, Value& r) {
            Items all;
            for (Value part : outer->items(x[0])) {
              const Items& more = inner->items(part);
              all.insert(all.end(), more.begin(), more.end());
            }
            r = inner->make(std::move(all));
            return true;
          });
        }
      }
    }
  }

 private:
  Shared as(SortId s, ContainerKind kind) const {
    const Sort& sort = egraph_.sort(s);
    if (!sort.container || sort.container->kind() != kind) return nullptr;
    return Shared(sort.primitive, sort.container);
  }

  void add(std::string name, std::vector<SortId> inputs, SortId output, PrimitiveFn fn) {
    egraph_.primitives().add(
        Primitive{std::move(name), std::move(inputs), output, false, std::move(fn), owner_.get(), owner_id_});
  }

  // Primitives of a function-value sort `fs` (signature `sig`: inputs..., output) and one
  // container sort `a`.
  void with_one_container(SortId fs, const Shared& fn, SortId a) {
    const std::vector<SortId>& sig = fn->params();
    if (Shared map = as(a, ContainerKind::Map)) {
      if (sig.size() == 4 && sig[0] == sig[3] && sig[1] == map->params()[0] && sig[2] == map->params()[1]) {
        // Folds the entries in key order: acc = f(acc, key, value).
        add("map-fold-kv", {fs, sig[0], a}, sig[0], [fn, map](const Value* x, std::size_t, Value& r) {
          Value acc = x[1];
          const Items& items = map->items(x[2]);
          for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
            Value args[] = {acc, items[i], items[i + 1]};
            if (!call_function_value(*fn, x[0], args, 3, acc)) return false;
          }
          r = acc;
          return true;
        });
      }
    }
    if (Shared ms = as(a, ContainerKind::MultiSet)) {
      SortId t = ms->params()[0];
      if (sig.size() == 2 && sig[0] == t && sig[1] == b_.unit) {
        // Keeps the elements (every occurrence) for which the predicate holds, or does not.
        for (bool keep : {true, false}) {
          add(keep ? "unstable-multiset-filter" : "unstable-multiset-filter-not", {fs, a}, a,
              [fn, ms, keep](const Value* x, std::size_t, Value& r) {
                Items kept;
                for (Value item : ms->items(x[1])) {
                  Value unit = 0;
                  if (call_function_value(*fn, x[0], &item, 1, unit) == keep) kept.push_back(item);
                }
                primitive_failure_reason().clear();  // a failing predicate is an answer here
                r = ms->make(std::move(kept));
                return true;
              });
        }
      }
      if (sig.size() == 3 && sig[0] == t && sig[1] == t && sig[2] == t) {
        // Folds the elements in order, starting from the first; `init` answers an empty multiset.
        add("unstable-multiset-reduce", {fs, t, a}, t, [fn, ms](const Value* x, std::size_t, Value& r) {
          const Items& items = ms->items(x[2]);
          if (items.empty()) {
            r = x[1];
            return true;
          }
          Value acc = items[0];
          for (std::size_t i = 1; i < items.size(); ++i) {
            Value args[] = {acc, items[i]};
            if (!call_function_value(*fn, x[0], args, 2, acc)) return false;
          }
          r = acc;
          return true;
        });
      }
      if (sig.size() == 3 && sig[0] == a && sig[1] == t && sig[2] == b_.i64) {
        add_index_commands(fs, fn, a, ms);
      }
    }
    if (Shared maybe = as(a, ContainerKind::Maybe)) {
      if (sig.size() == 2 && sig[0] == maybe->params()[0]) {
        // f(x) for (maybe-some x), else the default.
        add("unstable-maybe-match", {a, fs, sig[1]}, sig[1], [fn, maybe](const Value* x, std::size_t, Value& r) {
          const Items& items = maybe->items(x[0]);
          if (items.empty()) {
            r = x[2];
            return true;
          }
          return call_function_value(*fn, x[1], items.data(), 1, r);
        });
      }
      if (sig.size() == 1 && sig[0] == maybe->params()[0]) {
        // (maybe-some (f)), or maybe-none when the call fails.
        add("unstable-catch", {fs}, a, [fn, maybe](const Value* x, std::size_t, Value& r) {
          Value y = 0;
          if (call_function_value(*fn, x[0], nullptr, 0, y)) {
            r = maybe->make({y});
          } else {
            primitive_failure_reason().clear();
            r = maybe->make({});
          }
          return true;
        });
      }
    }
  }

  // (unstable-multiset-fill-index ms f) sets f(ms, x) to the count of x for every element x whose
  // row is absent; (unstable-multiset-clear-index ms f) deletes those rows. `f` names a function
  // (its partial arguments come first). Top-level actions only, as in egglog (lower_actions).
  void add_index_commands(SortId fs, const Shared& fn, SortId a, const Shared& ms) {
    for (bool fill : {true, false}) {
      add(fill ? "unstable-multiset-fill-index" : "unstable-multiset-clear-index", {a, fs}, b_.unit,
          [fn, ms, fill](const Value* x, std::size_t, Value& r) {
            r = 0;
            const Items& fn_items = fn->items(x[1]);
            const Callable& target = fn->callable(fn_items[0]);
            PrimitiveContext& context = primitive_context();
            std::optional<FunctionId> f =
                target.primitive || !context.egraph ? std::nullopt : context.egraph->find_function(target.name);
            if (!f || context.egraph->function(*f).kind != FunctionKind::Function) {
              primitive_failure_reason() = "'" + target.name + "' is not a function";
              return false;
            }
            if (!context.may_insert) {
              primitive_failure_reason() = "only top-level actions may change a function's rows";
              return false;
            }
            Items keys(fn_items.begin() + 1, fn_items.end());
            keys.push_back(x[0]);
            keys.push_back(0);
            const Items& items = ms->items(x[0]);
            for (std::size_t i = 0; i < items.size();) {
              std::size_t j = i;
              while (j < items.size() && items[j] == items[i]) ++j;
              keys.back() = items[i];
              if (!fill) {
                context.egraph->remove(*f, keys.data());
              } else if (!context.egraph->lookup(*f, keys.data())) {
                context.egraph->set(*f, keys.data(), I64Sort::make(static_cast<i64>(j - i)));
              }
              i = j;
            }
            return true;
          });
    }
  }

  // Primitives that map one container sort `a` to another `c` through function value `fn`.
  void with_two_containers(SortId fs, const Shared& fn, SortId a, SortId c) {
    const std::vector<SortId>& sig = fn->params();
    if (sig.size() != 2) return;
    auto mapper = [&](const char* name, ContainerKind kind) {
      Shared in = as(a, kind), out = as(c, kind);
      if (!in || !out || in->params()[0] != sig[0] || out->params()[0] != sig[1]) return;
      add(name, {fs, a}, c, [fn, in, out](const Value* x, std::size_t, Value& r) {
        Items mapped;
        for (Value item : in->items(x[1])) {
          Value y = 0;
          if (call_function_value(*fn, x[0], &item, 1, y)) mapped.push_back(y);
        }
        primitive_failure_reason().clear();  // egglog drops an element whose call fails
        r = out->make(std::move(mapped));
        return true;
      });
    };
    mapper("unstable-vec-map", ContainerKind::Vec);
    mapper("unstable-multiset-map", ContainerKind::MultiSet);
    Shared in = as(a, ContainerKind::MultiSet), out = as(c, ContainerKind::MultiSet);
    if (in && out && a == c && in->params()[0] == sig[0] && sig[1] == c) {
      // The sum of f(x) over the elements (egglog has it for one multiset sort only).
      add("unstable-multiset-flat-map", {fs, a}, c, [fn, in, out](const Value* x, std::size_t, Value& r) {
        Items all;
        for (Value item : in->items(x[1])) {
          Value part = 0;
          if (call_function_value(*fn, x[0], &item, 1, part)) {
            const Items& more = out->items(part);
            all.insert(all.end(), more.begin(), more.end());
          } else {
            all.push_back(item);  // egglog keeps an element whose call fails
          }
        }
        primitive_failure_reason().clear();
        r = out->make(std::move(all));
        return true;
      });
    }
  }

  EGraph& egraph_;
  const Builtins& b_;
  Shared owner_;
  SortId owner_id_ = 0;
};

}  // namespace

std::size_t ValueListHash::operator()(const std::vector<Value>& items) const {
  return static_cast<std::size_t>(support::hash64(items.data(), items.size() * sizeof(Value)));
}

ContainerSort::ContainerSort(ContainerKind kind, std::vector<SortId> params, bool holds_eclasses,
                             SortId plain)
    : kind_(kind), params_(std::move(params)), holds_eclasses_(holds_eclasses), plain_(plain) {}

Value ContainerSort::callable_index(const Callable& target) const {
  for (std::size_t i = 0; i < callables_.size(); ++i) {
    const Callable& c = callables_[i];
    if (c.name == target.name && c.primitive == target.primitive && c.inputs == target.inputs &&
        c.output == target.output) {
      return i;
    }
  }
  callables_.push_back(target);
  return callables_.size() - 1;
}

Value ContainerSort::make(std::vector<Value> items) const {
  switch (kind_) {
    case ContainerKind::Set:
      std::sort(items.begin(), items.end());
      items.erase(std::unique(items.begin(), items.end()), items.end());
      break;
    case ContainerKind::MultiSet:
      std::sort(items.begin(), items.end());
      break;
    case ContainerKind::Map:
      items = normalize_map(items);
      break;
    case ContainerKind::Vec:
    case ContainerKind::Pair:
    case ContainerKind::Maybe:
    case ContainerKind::Fn:
      break;
  }
  return store_.intern(items);
}

const char* ContainerSort::head(Value v) const {
  switch (kind_) {
    case ContainerKind::Vec: return items(v).empty() ? "vec-empty" : "vec-of";
    case ContainerKind::Set: return "set-of";
    case ContainerKind::MultiSet: return "multiset-of";
    case ContainerKind::Map: return "map-of";
    case ContainerKind::Pair: return "pair";
    case ContainerKind::Maybe: return items(v).empty() ? "maybe-none" : "maybe-some";
    case ContainerKind::Fn: return "unstable-fn";
  }
  return "";
}

std::string ContainerSort::print(Value v) const {
  std::string out = std::string("(") + head(v);
  for (Value item : items(v)) out += " #" + std::to_string(item);
  return out + ")";
}

void for_each_eclass(const EGraph& egraph, SortId sort, Value value, const std::function<void(Value)>& visit) {
  const Sort& s = egraph.sort(sort);
  if (s.is_eq) {
    visit(value);
    return;
  }
  if (!s.holds_eclasses || !s.container) return;
  const std::vector<Value>& items = s.container->items(value);
  // A function value's first item is its target's index, not an element.
  for (std::size_t i = s.container->kind() == ContainerKind::Fn ? 1 : 0; i < items.size(); ++i) {
    for_each_eclass(egraph, s.container->item_sort(items, i), items[i], visit);
  }
}

bool container_kind(const std::string& name, ContainerKind& kind, std::size_t& arity) {
  static const std::map<std::string, std::pair<ContainerKind, std::size_t>> kinds{
      {"Vec", {ContainerKind::Vec, 1}},   {"Set", {ContainerKind::Set, 1}},
      {"MultiSet", {ContainerKind::MultiSet, 1}}, {"Map", {ContainerKind::Map, 2}},
      {"Pair", {ContainerKind::Pair, 2}}, {"Maybe", {ContainerKind::Maybe, 1}}};
  auto found = kinds.find(name);
  if (found == kinds.end()) return false;
  kind = found->second.first;
  arity = found->second.second;
  return true;
}

// (vec-union a b) on a Vec of e-classes: unions the two vectors' elements pair by pair (they
// must be as long) and returns a. Egglog's rules use it where two vectors became equal, to
// make their elements equal too. It changes the e-graph, so only actions may call it.
void add_vec_union(EGraph& egraph, SortId self, const std::shared_ptr<const ContainerSort>& sort) {
  Primitive p{"vec-union", {self, self}, self, false,
              [sort](const Value* a, std::size_t, Value& r) {
                const Items& x = sort->items(a[0]);
                const Items& y = sort->items(a[1]);
                if (x.size() != y.size()) {
                  primitive_failure_reason() = "the vectors have " + std::to_string(x.size()) + " and " +
                                               std::to_string(y.size()) + " elements";
                  return false;
                }
                PrimitiveContext& context = primitive_context();
                if (!context.egraph || !context.may_insert) return false;
                // Copied: a union may re-intern nothing here, but the items live in the sort.
                Items left = x, right = y;
                for (std::size_t i = 0; i < left.size(); ++i) context.egraph->unite(left[i], right[i]);
                r = a[0];
                return true;
              },
              sort.get(), self};
  p.in_queries = false;
  egraph.primitives().add(std::move(p));
}

SortId add_container_sort(EGraph& egraph, const Builtins& builtins, const std::string& name,
                          ContainerKind kind, std::vector<SortId> params) {
  bool holds = false;
  for (SortId p : params) holds |= egraph.sort(p).is_eq || egraph.sort(p).holds_eclasses;
  auto sort = std::make_shared<const ContainerSort>(kind, std::move(params), holds);
  SortId self = egraph.add_sort(Sort{name, false, sort});
  ContainerPrimitives prims(egraph.primitives(), builtins, self, sort);
  switch (kind) {
    case ContainerKind::Vec:
      prims.vec();
      if (egraph.sort(sort->params()[0]).is_eq) add_vec_union(egraph, self, sort);
      break;
    case ContainerKind::Set: prims.set(); break;
    case ContainerKind::MultiSet: prims.multiset(); break;
    case ContainerKind::Map: prims.map(); break;
    case ContainerKind::Pair: prims.pair(); break;
    case ContainerKind::Maybe: prims.maybe(); break;
    case ContainerKind::Fn: break;  // add_function_value_sort registers unstable-app
  }
  HigherOrder(egraph, builtins).add_all(self);
  return self;
}

SortId add_function_value_sort(EGraph& egraph, const Builtins& builtins, const std::string& name,
                               std::vector<SortId> inputs, SortId output) {
  std::vector<SortId> params = inputs;
  params.push_back(output);
  // Partial arguments may be e-classes whatever the signature, so values are canonicalized.
  auto sort = std::make_shared<const ContainerSort>(ContainerKind::Fn, std::move(params), true,
                                                    builtins.i64);
  SortId self = egraph.add_sort(Sort{name, false, sort});
  std::vector<SortId> app_inputs{self};
  app_inputs.insert(app_inputs.end(), inputs.begin(), inputs.end());
  egraph.primitives().add(Primitive{
      "unstable-app", std::move(app_inputs), output, false,
      [sort](const Value* a, std::size_t n, Value& r) {
        return call_function_value(*sort, a[0], a + 1, n - 1, r);
      },
      sort.get(), self});
  HigherOrder(egraph, builtins).add_all(self);
  return self;
}

const Primitive& function_value_builder(EGraph& egraph, SortId sort_id, const Callable& target) {
  const ContainerSort* sort = egraph.sort(sort_id).container;
  std::shared_ptr<const ContainerSort> owner(egraph.sort(sort_id).primitive, sort);
  Value index = sort->callable_index(target);
  std::size_t partial = target.inputs.size() - (sort->params().size() - 1);
  std::vector<SortId> inputs(target.inputs.begin(), target.inputs.begin() + static_cast<std::ptrdiff_t>(partial));
  return egraph.primitives().add(Primitive{
      "unstable-fn \"" + target.name + "\"", std::move(inputs), sort_id, false,
      [owner, index](const Value* a, std::size_t n, Value& r) {
        std::vector<Value> items{index};
        items.insert(items.end(), a, a + n);
        r = owner->make(std::move(items));
        return true;
      },
      sort, sort_id});
}

}  // namespace kiln::engine
