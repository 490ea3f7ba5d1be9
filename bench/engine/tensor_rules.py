"""Generator of `tensor_rules`: a tensor compiler's large rule file over a decoder graph.

The shape of the rule files written for GPU tensor compilers: an `Op` node whose kind
(one of 80 variants) carries shape and stride lists and whose inputs are a cons list
(`ICons`/`INil`); a 30-layer decoder as a few thousand `let`s; ten rulesets in a nested
`saturate`/`seq` schedule; about 300 rules, most of them chains of 3-5 ops followed through
the input lists (10-23 atoms each) with primitive guards on shapes and axes, which never
match; marker functions (`depth`, `stage`) and a state relation (`cand`) carrying facts from
one rule to the next; `subsume` actions on the ops a fusion replaces.

Deterministic (a fixed-seed LCG), stdlib only; used by gen.py.
"""

LAYERS = 30
RULES_PER_RULESET = 30
# Ops per chain rule. egglog 14.0.0's time grows steeply with it (3-8 ops: over 300 s for the
# whole program, kiln ~1 s), so the benchmark keeps the chains short.
CHAIN_OPS = (3, 5)
SEED = 0x7A3F_19C4_0B5D_2E61

UNARY = ["Exp", "Log", "Sin", "Cos", "Recip", "Sqrt", "Rsqrt", "Neg", "Relu", "Gelu", "Silu",
         "Tanh", "Sigmoid", "Abs", "Square", "Floor", "Ceil", "Round", "Sign", "Erf", "Exp2",
         "Log2", "Not", "Cast", "Copy", "Contig"]                      # (shape stride)
BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Mod", "Lt", "Gt", "Eq", "Ne",
          "And", "Or", "Xor", "Atan2"]                                 # (shape sa sb so)
REDUCE = ["Sum", "MaxR", "MinR", "Prod", "Mean", "ArgMax", "ArgMin", "Any", "All", "Var"]
MOVE = {  # name -> argument sorts after the output shape
    "Permute": ["Shape"], "Reshape": ["Shape"], "Expand": ["i64", "i64"],
    "Slice": ["i64", "i64", "i64"], "Pad": ["i64", "i64", "i64"], "Concat": ["i64"],
    "Gather": ["i64"], "Scatter": ["i64"], "Where": ["Shape"], "Iota": ["i64"],
    "Const": ["i64"], "Cumsum": ["Shape", "i64"], "Softmax": ["i64"],
}
FUSED = ["FRms", "FSoftmax", "FGemm", "FGelu", "FSwiglu", "FRope", "FAttn", "FNorm", "FAddMul",
         "FMulAdd", "FExpSum", "FMaxSub", "FScale", "FBias", "FResid"]  # (shape i64)

RULESETS = ["prop", "back", "canon", "fuse_elem", "fuse_red", "fuse_attn", "fuse_mlp",
            "layout", "lower", "cleanup"]


class Lcg:
    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def below(self, n):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        return (self.state >> 33) % n

    def pick(self, xs):
        return xs[self.below(len(xs))]


def kind_sorts(kind):
    if kind in UNARY:
        return ["Shape", "Shape"]
    if kind in BINARY:
        return ["Shape", "Shape", "Shape", "Shape"]
    if kind in REDUCE:
        return ["Shape", "Shape", "i64"]
    if kind in MOVE:
        return ["Shape"] + MOVE[kind]
    return ["Shape", "i64"]


def shape(dims):
    t = "(SNil)"
    for d in reversed(dims):
        t = f"(SCons {d} {t})"
    return t


def strides(dims):
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return list(reversed(out))


def ilist(items):
    t = "(INil)"
    for x in reversed(items):
        t = f"(ICons {x} {t})"
    return t


class Graph:
    """The model: nodes (kind, kind args as text, input node ids, output dims), one `let` each."""

    def __init__(self):
        self.nodes = []  # (kind, args text, inputs, dims)
        self.lets = []

    def add(self, kind, args, inputs, dims):
        nid = len(self.nodes)
        self.nodes.append((kind, args, inputs, dims))
        if kind == "In":
            self.lets.append(f'(let $n{nid} (In "{args}" {shape(dims)}))')
        else:
            ins = ilist([f"$n{i}" for i in inputs])
            self.lets.append(f"(let $n{nid} (Op ({kind} {' '.join(args)}) {ins}))")
        return nid

    def dims(self, n):
        return self.nodes[n][3]

    def inp(self, name, dims):
        return self.add("In", name, [], dims)

    def unary(self, kind, a):
        d = self.dims(a)
        return self.add(kind, [shape(d), shape(strides(d))], [a], d)

    def binary(self, kind, a, b):
        d = self.dims(a)
        st = shape(strides(d))
        return self.add(kind, [shape(d), st, shape(strides(self.dims(b))), st], [a, b], d)

    def reduce(self, kind, a, axis):
        d = list(self.dims(a))
        del d[axis]
        return self.add(kind, [shape(d), shape(strides(self.dims(a))), str(axis)], [a], d)

    def expand(self, a, axis, size):
        d = list(self.dims(a))
        d.insert(axis, size)
        return self.add("Expand", [shape(d), str(axis), str(size)], [a], d)

    def reshape(self, a, dims):
        return self.add("Reshape", [shape(dims), shape(self.dims(a))], [a], dims)

    def permute(self, a, perm):
        d = [self.dims(a)[p] for p in perm]
        return self.add("Permute", [shape(d), shape(perm)], [a], d)

    def const(self, dims, v):
        return self.add("Const", [shape(dims), str(v)], [], dims)

    def matmul(self, a, w):
        m, k = self.dims(a)
        n = self.dims(w)[1]
        ea = self.expand(a, 2, n)
        ew = self.expand(w, 0, m)
        return self.reduce("Sum", self.binary("Mul", ea, ew), 1)


def build_decoder(layers):
    T, D, H, HD, F = 32, 256, 4, 64, 768
    g = Graph()

    def rms(x, tag):
        sq = g.binary("Mul", x, x)
        s = g.reduce("Sum", sq, 1)
        m = g.binary("Mul", s, g.const([T], 3))
        a = g.binary("Add", m, g.const([T], 1))
        r = g.unary("Rsqrt", a)
        n = g.binary("Mul", x, g.expand(r, 1, D))
        w = g.inp(f"{tag}_w", [D])
        return g.binary("Mul", n, g.expand(w, 0, T))

    def heads(x):
        return g.permute(g.reshape(x, [T, H, HD]), [1, 0, 2])

    x = g.inp("tokens", [T, D])
    for l in range(layers):
        n = rms(x, f"l{l}_an")
        q, k, v = (heads(g.matmul(n, g.inp(f"l{l}_w{c}", [D, D]))) for c in "qkv")
        qe = g.expand(q, 3, T)                                # [H,T,HD,T]
        ke = g.expand(g.permute(k, [0, 2, 1]), 1, T)          # [H,T,HD,T]
        s = g.reduce("Sum", g.binary("Mul", qe, ke), 2)       # [H,T,T]
        s = g.binary("Add", g.binary("Mul", s, g.const([H, T, T], 8)), g.const([H, T, T], 0))
        mx = g.reduce("MaxR", s, 2)
        e = g.unary("Exp", g.binary("Sub", s, g.expand(mx, 2, T)))
        den = g.unary("Recip", g.reduce("Sum", e, 2))
        p = g.binary("Mul", e, g.expand(den, 2, T))
        pe = g.expand(p, 3, HD)                               # [H,T,T,HD]
        ve = g.expand(v, 1, T)                                # [H,T,T,HD]
        o = g.reduce("Sum", g.binary("Mul", pe, ve), 2)       # [H,T,HD]
        o = g.reshape(g.permute(o, [1, 0, 2]), [T, D])
        x = g.binary("Add", x, g.matmul(o, g.inp(f"l{l}_wo", [D, D])))
        n = rms(x, f"l{l}_mn")
        gate = g.unary("Silu", g.matmul(n, g.inp(f"l{l}_wg", [D, F])))
        up = g.matmul(n, g.inp(f"l{l}_wu", [D, F]))
        x = g.binary("Add", x, g.matmul(g.binary("Mul", gate, up), g.inp(f"l{l}_wd", [F, D])))
    g.final_residual = x
    g.unary("Copy", rms(x, "final"))
    return g


class Pattern:
    """A rule body under construction: atoms as text, fresh variables."""

    def __init__(self):
        self.atoms = []
        self.fresh = 0

    def var(self, stem):
        self.fresh += 1
        return f"?{stem}{self.fresh}"

    def op(self, kind, inputs):
        """Binds a fresh ?a to an op of `kind` over `inputs` (variables); returns (?a, kind args)."""
        args = []
        for sort in kind_sorts(kind):
            args.append(self.var("s" if sort == "Shape" else "i"))
        a = self.var("a")
        # The list's tail is left open (the kind fixes the arity): a shared `(INil)` would
        # connect every atom of the chain through one constant.
        inputs_list = self.var("t")
        for x in reversed(inputs):
            inputs_list = f"(ICons {x} {inputs_list})"
        self.atoms.append(f"(= {a} (Op ({kind} {' '.join(args)}) {inputs_list}))")
        return a, args


def consumers_of(g):
    out = [[] for _ in g.nodes]
    for nid, (kind, _, inputs, _) in enumerate(g.nodes):
        for pos, i in enumerate(inputs):
            out[i].append((nid, pos))
    return out


def chain_rule(g, users, rng, name, ruleset, rule_index):
    """A rule following a real producer->consumer path of the graph for CHAIN_OPS ops; most get a
    last step, guard or marker that the graph never satisfies, the rest fuse the chain."""
    while True:
        start = rng.below(len(g.nodes))
        if g.nodes[start][0] not in ("In", "Const") and users[start]:
            break
    length = CHAIN_OPS[0] + rng.below(CHAIN_OPS[1] - CHAIN_OPS[0] + 1)
    path = [start]
    while len(path) < length and users[path[-1]]:
        path.append(rng.pick(users[path[-1]])[0])
    p = Pattern()
    first_kind, _, first_inputs, _ = g.nodes[path[0]]
    prev, prev_args = p.op(first_kind, [p.var("x") for _ in first_inputs])
    first_var, first_args = prev, prev_args
    for step, nid in enumerate(path[1:]):
        kind, _, inputs, _ = g.nodes[nid]
        pos = next(q for q, i in enumerate(inputs) if i == path[step])
        ins = [prev if q == pos else p.var("y") for q in range(len(inputs))]
        prev, prev_args = p.op(kind, ins)
    last_var, last_kind, last_args = prev, g.nodes[path[-1]][0], prev_args

    mode = rng.below(10)
    if mode == 0 and ruleset in ("prop", "back"):
        mode = 1  # the marker-walking rulesets only carry non-matching chains
    fires = mode == 0
    shape_vars = [a for a, s in zip(first_args, kind_sorts(first_kind)) if s == "Shape"]
    last_shape = last_args[0]
    if mode in (1, 2):
        # a consumer kind that never follows this op in the graph
        bad = rng.pick(UNARY)
        p.op(bad, [last_var])
    elif mode in (3, 4):
        # the first op's output dims, destructured, checked against the last op's
        d0, d1 = p.var("d"), p.var("d")
        p.atoms.append(f"(= {shape_vars[0]} (SCons {d0} (SCons {d1} ?r{rule_index})))")
        p.atoms.append(f"(= {last_shape} (SCons {d1} (SCons {d0} ?q{rule_index})))")
        p.atoms.append(f"(> {d0} (+ {d1} 100000))")
    elif mode in (5, 6):
        # a marker holding state: the chain's head must be at a stage no rule reaches
        st = p.var("m")
        p.atoms.append(f"(= (stage {first_var}) {st})")
        p.atoms.append(f"(>= {st} {4 + rng.below(3)})")
    elif mode == 7:
        # a depth window no node is in
        dv = p.var("m")
        p.atoms.append(f"(= (depth {first_var}) {dv})")
        p.atoms.append(f"(> {dv} 100000)")
    elif mode in (8, 9):
        # dims of the last op that the model never has (a 3-dim output of width 7)
        d0, d1, d2 = p.var("d"), p.var("d"), p.var("d")
        p.atoms.append(f"(= {last_shape} (SCons {d0} (SCons {d1} (SCons {d2} (SNil)))))")
        p.atoms.append(f"(= (% {d2} 128) 7)")
    if fires:
        fk = FUSED[rule_index % len(FUSED)]
        st = p.var("m")
        p.atoms.append(f"(= (stage {first_var}) {st})")
        p.atoms.append(f"(< {st} 3)")
        actions = [
            f"(let fused (Op ({fk} {last_shape} {len(path)}) (ICons {first_var} (INil))))",
            f"(union {last_var} fused)",
            f"(set (stage fused) (+ {st} 1))",
            f"(cand {first_var} {last_var} {len(path)})",
        ]
        # the replaced op stays in the e-class but is hidden from later matching
        last_atom = p.atoms[len(path) - 1]
        last_term = last_atom[len(f"(= {last_var} "):-1]
        actions.append(f"(subsume {last_term})")
    else:
        actions = [
            f"(union {last_var} (Op ({rng.pick(FUSED)} {last_shape} {len(path)}) (INil)))",
            f"(set (stage {last_var}) 5)",
        ]
    body = "\n       ".join(p.atoms)
    acts = "\n       ".join(actions)
    return f"(rule ({body})\n      ({acts})\n      :ruleset {ruleset} :name \"{name}\")"


PRELUDE = """\
;; tensor_rules: a tensor compiler's rule file (80 op kinds over shape/stride lists, inputs as
;; cons lists), ten rulesets of long chain rules, markers and subsumption, run over a
;; 30-layer decoder graph.
(datatype Shape (SNil) (SCons i64 Shape))
(datatype*
  (Node (In String Shape) (Op Kind IList))
  (IList (INil) (ICons Node IList))
  (Kind
{kinds}))

(function depth (Node) i64 :merge (min old new))
(function rdepth (Node) i64 :merge (min old new))
(function stage (Node) i64 :merge (max old new))
(relation cand (Node Node i64))
(relation reached (Node))
{rulesets}
"""


def kinds_text():
    lines = []
    for k in UNARY + BINARY + REDUCE + list(MOVE) + FUSED:
        lines.append(f"    ({k} {' '.join(kind_sorts(k))})")
    return "\n".join(lines)


def fixed_rules():
    """Rules that make the run long and stateful: depth markers walk the residual stream one
    layer per iteration, stages advance, candidates found by fusions are consumed later."""
    return """\
(rule ((= a (Op k l))) ((set (stage a) 0)) :ruleset prop :name "stage-init")
(rule ((= (depth x) d) (= y (Op (Add s sa sb so) (ICons x r))))
      ((set (depth y) (+ d 1)) (reached y)) :ruleset prop :name "depth-residual")
(rule ((= (rdepth y) d) (= y (Op (Add s sa sb so) (ICons x r))))
      ((set (rdepth x) (+ d 1))) :ruleset back :name "rdepth-residual")
(rule ((reached y) (= (depth y) d) (= y (Op (Add s sa sb so) (ICons x (ICons z (INil))))))
      ((set (stage z) 1)) :ruleset back :name "stage-residual-branch")
(rule ((cand a b n) (= (stage a) s) (< s 2))
      ((set (stage a) 2)) :ruleset cleanup :name "cand-advance")
(rule ((cand a b n) (= (stage b) s) (> n 4))
      ((set (stage b) (max s 2))) :ruleset cleanup :name "cand-long")
(rewrite (Op (Copy s st) (ICons x (INil))) x :subsume :ruleset canon :name "copy-elide")
(rewrite (Op (Contig s st) (ICons x (INil))) x :subsume :ruleset canon :name "contig-elide")
(rule ((= e (Op (Expand s ax n) (ICons x (INil))))
       (= r (Op (Sum s2 st ax) (ICons e (INil)))))
      ((union r (Op (Mul s2 st st st) (ICons x (ICons (Op (Const s2 n) (INil)) (INil))))))
      :ruleset canon :name "sum-of-expand")
(rule ((= a (Op (Add s sa sb so) (ICons x (ICons y (INil))))) (= (stage a) 1))
      ((union a (Op (Add s sb sa so) (ICons y (ICons x (INil)))))) :ruleset canon :name "add-comm-branch")
"""


def gen_tensor_rules(layers=LAYERS, rules_per_ruleset=RULES_PER_RULESET, seed=SEED):
    g = build_decoder(layers)
    users = consumers_of(g)
    rng = Lcg(seed)
    rules = []
    index = 0
    for rs in RULESETS:
        for r in range(rules_per_ruleset):
            rules.append(chain_rule(g, users, rng, f"{rs}-chain-{r}", rs, index))
            index += 1
    out = [PRELUDE.format(kinds=kinds_text(),
                          rulesets="\n".join(f"(ruleset {r})" for r in RULESETS)),
           fixed_rules(), "\n\n".join(rules), "", "\n".join(g.lets),
           "(set (depth $n0) 0)",
           f"(set (rdepth $n{g.final_residual}) 0)",
           "",
           "(run-schedule\n"
           "  (saturate prop)\n"
           "  (saturate back)\n"
           "  (saturate\n"
           "    (seq (saturate canon) (saturate fuse_elem) (run fuse_red) (saturate fuse_attn)\n"
           "         (saturate fuse_mlp) (saturate layout) (saturate lower)))\n"
           "  (saturate cleanup))",
           "(print-size)"]
    return "\n".join(out) + "\n"
