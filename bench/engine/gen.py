#!/usr/bin/env python3
"""Deterministic generators for the engine benchmark programs (stdlib only).

Each generator returns the text of one egglog-language program that ends with
`(print-size)`. The output depends only on the parameters below (a fixed-seed
64-bit LCG is used instead of `random`, so the text is identical on every
Python version and platform).

    gen.py                 write every program into bench/engine/programs/
    gen.py --out DIR       write them into DIR
    gen.py --only NAME     write only NAME
    gen.py --print NAME    print one program on stdout

The sizes are tuned so that the reference egglog (single thread) takes a few
seconds per program; see README.md.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_rules import gen_tensor_rules  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "programs")


class Lcg:
    """64-bit linear congruential generator (Knuth MMIX constants)."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def below(self, n):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        return (self.state >> 33) % n


# ---------------------------------------------------------------------------
# arith_blowup
# ---------------------------------------------------------------------------

ARITH_SUM_LEAVES = 11  # leaves of the AC sum; the AC closure of n leaves has ~3^n nodes
ARITH_PROD_LEAVES = 11  # leaves of the AC product
ARITH_ITERS = 9  # (run N)


def _chain(op, xs):
    t = xs[0]
    for x in xs[1:]:
        t = f"({op} {t} {x})"
    return t


def gen_arith_blowup(sum_leaves=ARITH_SUM_LEAVES, prod_leaves=ARITH_PROD_LEAVES, iters=ARITH_ITERS):
    def var(prefix, i):
        return f'(Var "{prefix}{i}")'

    out = [
        ";; arith_blowup: associativity / commutativity / distributivity saturation.",
        ";; Terms: a left-leaning sum and product of distinct variables (their AC closures",
        ";; grow like 3^n e-nodes) and a product of sums that distributivity expands and",
        ";; factoring folds back. Bounded by (run N); the e-graph is far from saturated.",
        "(datatype Math",
        "  (Num i64)",
        "  (Var String)",
        "  (Add Math Math)",
        "  (Mul Math Math))",
        "",
        '(rewrite (Add a b) (Add b a) :name "add-comm")',
        '(rewrite (Mul a b) (Mul b a) :name "mul-comm")',
        '(rewrite (Add a (Add b c)) (Add (Add a b) c) :name "add-assoc")',
        '(rewrite (Mul a (Mul b c)) (Mul (Mul a b) c) :name "mul-assoc")',
        '(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)) :name "distribute")',
        '(rewrite (Add (Mul a b) (Mul a c)) (Mul a (Add b c)) :name "factor")',
        '(rewrite (Add (Num a) (Num b)) (Num (+ a b)) :name "fold-add")',
        '(rewrite (Mul (Num a) (Num b)) (Num (* a b)) :name "fold-mul")',
        '(rewrite (Mul a (Num 1)) a :name "mul-one")',
        '(rewrite (Add a (Num 0)) a :name "add-zero")',
        "",
        f'(let $sum {_chain("Add", [var("a", i) for i in range(sum_leaves)])})',
        f'(let $prod {_chain("Mul", [var("b", i) for i in range(prod_leaves)])})',
    ]
    s1 = _chain("Add", [var("c", 0), var("c", 1), "(Num 1)"])
    s2 = _chain("Add", [var("c", 2), "(Num 2)"])
    s3 = _chain("Add", [var("c", 0), var("c", 3)])
    out.append(f'(let $dist {_chain("Mul", [s1, s2, s3])})')
    out.append("")
    out.append(f"(run {iters})")
    out.append("(print-size)")
    return "\n".join(out) + "\n"


ARITH_GROW_LEAVES = 3  # a (3-leaf sum) * (4-leaf sum)
ARITH_GROW_ITERS = 9


def gen_arith_grow(leaves=ARITH_GROW_LEAVES, iters=ARITH_GROW_ITERS):
    """Assoc/comm/distributivity over a product of two sums, run until it has ~10^6 rows."""
    def var(prefix, i):
        return f'(Var "{prefix}{i}")'

    out = [
        ";; arith_grow: associativity / commutativity / distributivity on a product of two",
        ";; sums: every iteration multiplies the Add and Mul tables; (run N) stops it at",
        ";; about a million rows, where apply and rebuild weigh as much as search.",
        "(datatype Math",
        "  (Num i64)",
        "  (Var String)",
        "  (Add Math Math)",
        "  (Mul Math Math))",
        "",
        '(rewrite (Add a b) (Add b a) :name "add-comm")',
        '(rewrite (Mul a b) (Mul b a) :name "mul-comm")',
        '(rewrite (Add a (Add b c)) (Add (Add a b) c) :name "add-assoc")',
        '(rewrite (Mul a (Mul b c)) (Mul (Mul a b) c) :name "mul-assoc")',
        '(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)) :name "distribute")',
        "",
        f'(let $p (Mul {_chain("Add", [var("a", i) for i in range(leaves)])} '
        f'{_chain("Add", [var("b", i) for i in range(leaves + 1)])}))',
        "",
        f"(run {iters})",
        "(print-size)",
    ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# datalog_tc
# ---------------------------------------------------------------------------

TC_NODES = 1000
TC_EDGES = 12000  # distinct directed edges, no self loops (average out-degree 12)
TC_SEED = 0x2545F4914F6CDD1D


def gen_datalog_tc(nodes=TC_NODES, edges=TC_EDGES, seed=TC_SEED):
    rng = Lcg(seed)
    es = set()
    while len(es) < edges:
        a, b = rng.below(nodes), rng.below(nodes)
        if a != b:
            es.add((a, b))
    out = [
        f";; datalog_tc: transitive closure over a pseudo-random graph, {nodes} nodes,",
        f";; {edges} edges; run to saturation (semi-naive Datalog, no e-classes).",
        "(relation edge (i64 i64))",
        "(relation path (i64 i64))",
        "",
        '(rule ((edge x y)) ((path x y)) :name "path-base")',
        '(rule ((path x y) (edge y z)) ((path x z)) :name "path-step")',
        "",
    ]
    out.extend(f"(edge {a} {b})" for a, b in sorted(es))
    out.append("")
    out.append("(run-schedule (saturate (run)))")
    out.append("(print-size)")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# tensor_luminal
# ---------------------------------------------------------------------------

TENSOR_LAYERS = 200
TENSOR_PRELUDE = r"""
;; tensor_luminal: a Luminal-style tensor graph compiled by rewriting.
;;   Expr   symbolic shape arithmetic (dims are variables); Numel/Strides/Nth/
;;          PermuteList/InsertAt compute derived shape lists by rewriting.
;;   Op     HLIR tensor ops; every op carries its output shape (an EList).
;;   Body   kernel loop bodies; (BArg op shape) loads a materialized op.
;; Schedule: shape algebra to saturation, shape analysis, lowering of every op
;; into a one-op Kernel, then elementwise/view fusion by unioning loads with the
;; producer's body; repeated until nothing changes, then a cost pass.

(datatype*
  (Expr
    (MNum i64)
    (MVar String)
    (MAdd Expr Expr)
    (MMul Expr Expr)
    (MDiv Expr Expr)
    (MMod Expr Expr)
    (MMax Expr Expr)
    (MMin Expr Expr)
    (Numel EList)
    (Nth EList i64))
  (EList
    (ENil)
    (ECons Expr EList)
    (Strides EList)
    (PermuteList EList IList)
    (InsertAt EList i64 Expr))
  (IList
    (INil)
    (ICons i64 IList))
  (Body
    (BArg Op EList)
    (BView Op EList EList)
    (BConst f64)
    (BUn String Body)
    (BBin String Body Body)
    (BRed String Body i64))
  (Op
    (Input String EList EList)
    (Const f64 EList)
    (Add Op Op EList)
    (Mul Op Op EList)
    (Exp2 Op EList)
    (Log2 Op EList)
    (Recip Op EList)
    (Sqrt Op EList)
    (SumReduce Op i64 EList)
    (MaxReduce Op i64 EList)
    (Permute Op IList EList)
    (Reshape Op EList)
    (Expand Op i64 Expr EList)
    (Matmul Op Op EList)
    (BMatmul Op Op EList)
    (Kernel Body EList EList)))

(relation has-shape (Op EList))
(function kcost (Op) i64 :merge (min old new))
(function bcost (Body) i64 :merge (min old new))

(ruleset expr)
(ruleset shape)
(ruleset lower)
(ruleset fuse)
(ruleset cleanup)

;; ---- expr: shape algebra --------------------------------------------------
(rewrite (MAdd a b) (MAdd b a) :ruleset expr :name "madd-comm")
(rewrite (MMul a b) (MMul b a) :ruleset expr :name "mmul-comm")
(rewrite (MMax a b) (MMax b a) :ruleset expr :name "mmax-comm")
(rewrite (MMin a b) (MMin b a) :ruleset expr :name "mmin-comm")
(rewrite (MAdd a (MAdd b c)) (MAdd (MAdd a b) c) :ruleset expr :name "madd-assoc")
(rewrite (MMul a (MMul b c)) (MMul (MMul a b) c) :ruleset expr :name "mmul-assoc")
(rewrite (MMul a (MAdd b c)) (MAdd (MMul a b) (MMul a c)) :ruleset expr :name "mmul-distribute")
(rewrite (MAdd (MNum a) (MNum b)) (MNum (+ a b)) :ruleset expr :name "madd-fold")
(rewrite (MMul (MNum a) (MNum b)) (MNum (* a b)) :ruleset expr :name "mmul-fold")
(rewrite (MDiv (MNum a) (MNum b)) (MNum (/ a b)) :when ((!= b 0)) :ruleset expr :name "mdiv-fold")
(rewrite (MMod (MNum a) (MNum b)) (MNum (% a b)) :when ((!= b 0)) :ruleset expr :name "mmod-fold")
(rewrite (MMax (MNum a) (MNum b)) (MNum (max a b)) :ruleset expr :name "mmax-fold")
(rewrite (MMin (MNum a) (MNum b)) (MNum (min a b)) :ruleset expr :name "mmin-fold")
(rewrite (MAdd a (MNum 0)) a :ruleset expr :name "madd-zero")
(rewrite (MMul a (MNum 1)) a :ruleset expr :name "mmul-one")
(rewrite (MDiv a (MNum 1)) a :ruleset expr :name "mdiv-one")
(rewrite (MDiv (MMul a b) b) a :ruleset expr :name "mdiv-cancel")
(rewrite (MMod (MMul a b) b) (MNum 0) :ruleset expr :name "mmod-cancel")
(rewrite (MMax a a) a :ruleset expr :name "mmax-idem")
(rewrite (MMin a a) a :ruleset expr :name "mmin-idem")
(rewrite (Numel (ENil)) (MNum 1) :ruleset expr :name "numel-nil")
(rewrite (Numel (ECons d r)) (MMul d (Numel r)) :ruleset expr :name "numel-cons")
(rewrite (Nth (ECons x r) 0) x :ruleset expr :name "nth-zero")
(rewrite (Nth (ECons x r) i) (Nth r (- i 1)) :when ((> i 0)) :ruleset expr :name "nth-succ")
(rewrite (Strides (ECons d (ENil))) (ECons (MNum 1) (ENil)) :ruleset expr :name "strides-last")
(rewrite (Strides (ECons d (ECons e r)))
         (ECons (Numel (ECons e r)) (Strides (ECons e r))) :ruleset expr :name "strides-cons")
(rewrite (PermuteList l (INil)) (ENil) :ruleset expr :name "perm-nil")
(rewrite (PermuteList l (ICons i r)) (ECons (Nth l i) (PermuteList l r)) :ruleset expr :name "perm-cons")
(rewrite (InsertAt l 0 x) (ECons x l) :ruleset expr :name "insert-here")
(rewrite (InsertAt (ECons h r) i x) (ECons h (InsertAt r (- i 1) x)) :when ((> i 0))
         :ruleset expr :name "insert-later")

;; ---- shape: which shape each op has ---------------------------------------
(rule ((= o (Input n sh st))) ((has-shape o sh)) :ruleset shape :name "shape-input")
(rule ((= o (Const v sh))) ((has-shape o sh)) :ruleset shape :name "shape-const")
(rule ((= o (Add a b sh))) ((has-shape o sh)) :ruleset shape :name "shape-add")
(rule ((= o (Mul a b sh))) ((has-shape o sh)) :ruleset shape :name "shape-mul")
(rule ((= o (Exp2 a sh))) ((has-shape o sh)) :ruleset shape :name "shape-exp2")
(rule ((= o (Log2 a sh))) ((has-shape o sh)) :ruleset shape :name "shape-log2")
(rule ((= o (Recip a sh))) ((has-shape o sh)) :ruleset shape :name "shape-recip")
(rule ((= o (Sqrt a sh))) ((has-shape o sh)) :ruleset shape :name "shape-sqrt")
(rule ((= o (SumReduce a ax sh))) ((has-shape o sh)) :ruleset shape :name "shape-sum")
(rule ((= o (MaxReduce a ax sh))) ((has-shape o sh)) :ruleset shape :name "shape-max")
(rule ((= o (Permute a p sh))) ((has-shape o sh)) :ruleset shape :name "shape-permute")
(rule ((= o (Reshape a sh))) ((has-shape o sh)) :ruleset shape :name "shape-reshape")
(rule ((= o (Expand a ax d sh))) ((has-shape o sh)) :ruleset shape :name "shape-expand")
(rule ((= o (Matmul a b sh))) ((has-shape o sh)) :ruleset shape :name "shape-matmul")
(rule ((= o (BMatmul a b sh))) ((has-shape o sh)) :ruleset shape :name "shape-bmatmul")

;; ---- lower: every op becomes a one-op kernel ------------------------------
(rewrite (Const v sh) (Kernel (BConst v) sh (Strides sh)) :ruleset lower :name "lower-const")
(rewrite (Add a b sh) (Kernel (BBin "add" (BArg a sh) (BArg b sh)) sh (Strides sh))
         :ruleset lower :name "lower-add")
(rewrite (Mul a b sh) (Kernel (BBin "mul" (BArg a sh) (BArg b sh)) sh (Strides sh))
         :ruleset lower :name "lower-mul")
(rewrite (Exp2 a sh) (Kernel (BUn "exp2" (BArg a sh)) sh (Strides sh)) :ruleset lower :name "lower-exp2")
(rewrite (Log2 a sh) (Kernel (BUn "log2" (BArg a sh)) sh (Strides sh)) :ruleset lower :name "lower-log2")
(rewrite (Recip a sh) (Kernel (BUn "recip" (BArg a sh)) sh (Strides sh)) :ruleset lower :name "lower-recip")
(rewrite (Sqrt a sh) (Kernel (BUn "sqrt" (BArg a sh)) sh (Strides sh)) :ruleset lower :name "lower-sqrt")
(rule ((= o (SumReduce a ax sh)) (has-shape a ish))
      ((union o (Kernel (BRed "sum" (BArg a ish) ax) sh (Strides sh)))) :ruleset lower :name "lower-sum")
(rule ((= o (MaxReduce a ax sh)) (has-shape a ish))
      ((union o (Kernel (BRed "max" (BArg a ish) ax) sh (Strides sh)))) :ruleset lower :name "lower-max")
(rule ((= o (Permute a p sh)) (has-shape a ish))
      ((union o (Kernel (BView a sh (PermuteList (Strides ish) p)) sh (Strides sh))))
      :ruleset lower :name "lower-permute")
(rule ((= o (Reshape a sh)))
      ((union o (Kernel (BView a sh (Strides sh)) sh (Strides sh)))) :ruleset lower :name "lower-reshape")
(rule ((= o (Expand a ax d sh)) (has-shape a ish))
      ((union o (Kernel (BView a sh (InsertAt (Strides ish) ax (MNum 0))) sh (Strides sh))))
      :ruleset lower :name "lower-expand")
;; matmul [m,k] x [k,n] -> sum over k of the broadcast product [m,k,n]
(rule ((= o (Matmul a b sh))
       (has-shape a (ECons m (ECons k (ENil))))
       (has-shape b (ECons k2 (ECons n (ENil)))))
      ((let mkn (ECons m (ECons k (ECons n (ENil)))))
       (union o (SumReduce (Mul (Expand a 2 n mkn) (Expand b 0 m mkn) mkn) 1 sh)))
      :ruleset lower :name "lower-matmul")
;; batched matmul [h,m,k] x [h,k,n] -> sum over k of the broadcast product [h,m,k,n]
(rule ((= o (BMatmul a b sh))
       (has-shape a (ECons h (ECons m (ECons k (ENil)))))
       (has-shape b (ECons h2 (ECons k2 (ECons n (ENil))))))
      ((let hmkn (ECons h (ECons m (ECons k (ECons n (ENil))))))
       (union o (SumReduce (Mul (Expand a 3 n hmkn) (Expand b 1 m hmkn) hmkn) 2 sh)))
      :ruleset lower :name "lower-bmatmul")

;; ---- fuse: inline producers into consumers --------------------------------
;; A load of a kernel's output at the kernel's own shape is the kernel's body.
(rewrite (BArg (Kernel body sh st) sh) body :ruleset fuse :name "fuse-inline")
(rewrite (BBin "add" a b) (BBin "add" b a) :ruleset fuse :name "body-add-comm")
(rewrite (BBin "mul" a b) (BBin "mul" b a) :ruleset fuse :name "body-mul-comm")
(rewrite (BBin "mul" a (BBin "mul" b c)) (BBin "mul" (BBin "mul" a b) c) :ruleset fuse :name "body-mul-assoc")
(rewrite (BUn "exp2" (BUn "log2" x)) x :ruleset fuse :name "body-exp2-log2")
(rewrite (BUn "recip" (BUn "recip" x)) x :ruleset fuse :name "body-recip-recip")
(rewrite (BBin "mul" (BConst 1.0) x) x :ruleset fuse :name "body-mul-one")

;; ---- cleanup: simplify the HLIR and price the kernels ---------------------
(rewrite (Recip (Recip a sh) sh) a :ruleset cleanup :name "recip-recip")
(rewrite (Permute (Permute a (ICons 1 (ICons 0 (INil))) s1) (ICons 1 (ICons 0 (INil))) s2) a
         :ruleset cleanup :name "transpose-transpose")
(rule ((= o (Reshape a sh)) (has-shape a sh)) ((union o a)) :ruleset cleanup :name "reshape-noop")
(rule ((= o (Input n sh st))) ((set (kcost o) 0)) :ruleset cleanup :name "cost-input")
(rule ((= b (BArg o sh))) ((set (bcost b) 10)) :ruleset cleanup :name "cost-arg")
(rule ((= b (BView o sh st))) ((set (bcost b) 12)) :ruleset cleanup :name "cost-view")
(rule ((= b (BConst v))) ((set (bcost b) 1)) :ruleset cleanup :name "cost-const")
(rule ((= b (BUn f x)) (= c (bcost x))) ((set (bcost b) (+ c 4))) :ruleset cleanup :name "cost-un")
(rule ((= b (BBin f x y)) (= cx (bcost x)) (= cy (bcost y)))
      ((set (bcost b) (+ (+ cx cy) 2))) :ruleset cleanup :name "cost-bin")
(rule ((= b (BRed f x ax)) (= c (bcost x))) ((set (bcost b) (+ c 8))) :ruleset cleanup :name "cost-red")
(rule ((= o (Kernel body sh st)) (= c (bcost body))) ((set (kcost o) (+ c 100)))
      :ruleset cleanup :name "cost-kernel")
"""


def f64(v):
    """An f64 literal in plain decimal notation (no exponent)."""
    r = repr(float(v))
    if "e" in r or "E" in r:
        r = f"{v:.20f}".rstrip("0")
        if r.endswith("."):
            r += "0"
    return r


def gen_tensor_luminal(layers=TENSOR_LAYERS):
    """A decoder-style stack over flattened tokens T = batch*seq, width D.

    Each layer: RMS norm, 4-head attention against a KV cache of length
    seq+past+sink (Q/K/V/O projections, head split/merge by reshape+permute,
    batched matmuls, scaled exp2-softmax), residual, RMS norm, a gated MLP,
    residual; about 66 `let`s per layer. Shape expressions are written in
    several equivalent forms (commuted products and sums, unfolded constants,
    x*4/4) so that fusion only fires once the expr ruleset has proved them equal.
    """
    D = 64
    F = 4 * D
    H = 4
    lines = [TENSOR_PRELUDE.strip("\n"), ""]
    ctr = [0]

    def let(term):
        name = f"$t{ctr[0]}"
        ctr[0] += 1
        lines.append(f"(let {name} {term})")
        return name

    def elist(*dims):
        t = "(ENil)"
        for d in reversed(dims):
            t = f"(ECons {d} {t})"
        return t

    def ilist(*xs):
        t = "(INil)"
        for x in reversed(xs):
            t = f"(ICons {x} {t})"
        return t

    def num(n):
        return f"(MNum {n})"

    # equivalent spellings of the token count and the cache length
    tok_forms = [
        '(MMul (MVar "batch") (MVar "seq"))',
        '(MMul (MVar "seq") (MVar "batch"))',
        '(MMul (MMul (MVar "batch") (MNum 1)) (MVar "seq"))',
        '(MDiv (MMul (MMul (MVar "seq") (MVar "batch")) (MNum 4)) (MNum 4))',
    ]
    cache_forms = [
        '(MAdd (MAdd (MVar "seq") (MVar "past")) (MVar "sink"))',
        '(MAdd (MVar "past") (MAdd (MVar "sink") (MVar "seq")))',
        '(MAdd (MAdd (MMul (MVar "past") (MNum 1)) (MVar "seq")) (MVar "sink"))',
    ]
    dim_forms = {
        D: [num(D), f"(MMul (MNum 2) (MNum {D // 2}))", f"(MMul (MNum {D // 2}) (MNum 2))"],
        F: [num(F), f"(MMul (MNum 4) (MNum {D}))", f"(MAdd (MNum {F // 2}) (MNum {F // 2}))"],
    }
    rng = Lcg(0x5DEECE66D)

    def T():
        return tok_forms[rng.below(len(tok_forms))]

    def P():
        return cache_forms[rng.below(len(cache_forms))]

    def dim(n):
        return dim_forms[n][rng.below(len(dim_forms[n]))]

    head_forms = [num(H), f"(MDiv (MNum {D}) (MNum {D // H}))", f"(MMul (MNum 2) (MNum {H // 2}))"]
    hdim_forms = [num(D // H), f"(MDiv (MNum {D}) (MNum {H}))", f"(MDiv (MMul (MNum {D // H}) (MNum {H})) (MNum {H}))"]

    def hd():
        return head_forms[rng.below(len(head_forms))]

    def dh():
        return hdim_forms[rng.below(len(hdim_forms))]

    def weight(name, r, c):
        return let(f'(Input "{name}" {elist(num(r), num(c))} {elist(num(c), num(1))})')

    def const(v, *dims):
        return let(f"(Const {f64(v)} {elist(*dims)})")

    def rms_norm(x, tag):
        sq = let(f"(Mul {x} {x} {elist(T(), dim(D))})")
        ms = let(f"(SumReduce {sq} 1 {elist(T())})")
        sc = let(f"(Mul {ms} {const(1.0 / D, T())} {elist(T())})")
        eps = let(f"(Add {sc} {const(1e-5, T())} {elist(T())})")
        r = let(f"(Recip (Sqrt {eps} {elist(T())}) {elist(T())})")
        rb = let(f"(Expand {r} 1 {dim(D)} {elist(T(), dim(D))})")
        g = weight(f"{tag}_gain", 1, D)
        gb = let(f"(Reshape {g} {elist(dim(D))})")
        gbb = let(f"(Expand {gb} 0 {T()} {elist(T(), dim(D))})")
        y = let(f"(Mul {x} {rb} {elist(T(), dim(D))})")
        return let(f"(Mul {y} {gbb} {elist(T(), dim(D))})")

    def attention(x, l):
        wq, wk, wv, wo = (weight(f"l{l}_{w}", D, D) for w in ("wq", "wk", "wv", "wo"))
        kc = let(f'(Input "l{l}_kcache" {elist(P(), num(D))} {elist(num(D), num(1))})')
        vc = let(f'(Input "l{l}_vcache" {elist(P(), num(D))} {elist(num(D), num(1))})')
        q = let(f"(Matmul {x} {wq} {elist(T(), dim(D))})")
        k = let(f"(Matmul {kc} {wk} {elist(P(), dim(D))})")
        v = let(f"(Matmul {vc} {wv} {elist(P(), dim(D))})")
        # split heads: q -> [H, T, Dh], k -> [H, Dh, P], v -> [H, P, Dh]
        qh = let(f"(Permute (Reshape {q} {elist(T(), hd(), dh())}) {ilist(1, 0, 2)} {elist(hd(), T(), dh())})")
        kh = let(f"(Permute (Reshape {k} {elist(P(), hd(), dh())}) {ilist(1, 2, 0)} {elist(hd(), dh(), P())})")
        vh = let(f"(Permute (Reshape {v} {elist(P(), hd(), dh())}) {ilist(1, 0, 2)} {elist(hd(), P(), dh())})")
        s_ = let(f"(BMatmul {qh} {kh} {elist(hd(), T(), P())})")
        ss = let(f"(Mul {s_} {const(0.18033688011112042, hd(), T(), P())} {elist(hd(), T(), P())})")
        mx = let(f"(MaxReduce {ss} 2 {elist(hd(), T())})")
        nmx = let(f"(Mul {mx} {const(-1.0, hd(), T())} {elist(hd(), T())})")
        nmxb = let(f"(Expand {nmx} 2 {P()} {elist(hd(), T(), P())})")
        e = let(f"(Exp2 (Add {ss} {nmxb} {elist(hd(), T(), P())}) {elist(hd(), T(), P())})")
        den = let(f"(SumReduce {e} 2 {elist(hd(), T())})")
        rden = let(f"(Expand (Recip {den} {elist(hd(), T())}) 2 {P()} {elist(hd(), T(), P())})")
        p = let(f"(Mul {e} {rden} {elist(hd(), T(), P())})")
        o = let(f"(BMatmul {p} {vh} {elist(hd(), T(), dh())})")
        om = let(f"(Reshape (Permute {o} {ilist(1, 0, 2)} {elist(T(), hd(), dh())}) {elist(T(), dim(D))})")
        return let(f"(Matmul {om} {wo} {elist(T(), dim(D))})")

    def mlp(x, l):
        w1, w3 = weight(f"l{l}_w1", D, F), weight(f"l{l}_w3", D, F)
        w2 = weight(f"l{l}_w2", F, D)
        h = let(f"(Matmul {x} {w1} {elist(T(), dim(F))})")
        g = let(f"(Matmul {x} {w3} {elist(T(), dim(F))})")
        # silu(h) = h * 1/(1 + 2^(-h*log2 e))
        z = let(f"(Mul {h} {const(-1.4426950408889634, T(), dim(F))} {elist(T(), dim(F))})")
        den = let(f"(Add {const(1.0, T(), dim(F))} (Exp2 {z} {elist(T(), dim(F))}) {elist(T(), dim(F))})")
        act = let(f"(Mul {h} (Recip {den} {elist(T(), dim(F))}) {elist(T(), dim(F))})")
        gated = let(f"(Mul {act} {g} {elist(T(), dim(F))})")
        return let(f"(Matmul {gated} {w2} {elist(T(), dim(D))})")

    x = let(f'(Input "tokens" {elist(T(), num(D))} {elist(num(D), num(1))})')
    for l in range(layers):
        a = attention(rms_norm(x, f"l{l}_an"), l)
        x = let(f"(Add {x} {a} {elist(T(), dim(D))})")
        m = mlp(rms_norm(x, f"l{l}_mn"), l)
        x = let(f"(Add {x} {m} {elist(T(), dim(D))})")
    y = rms_norm(x, "final")
    lines.append(f'(let $logits (Matmul {y} {weight("unembed", D, 256)} {elist(T(), num(256))}))')
    lines.append("")
    lines.append(
        "(run-schedule\n"
        "  (saturate\n"
        "    (seq (saturate expr) (saturate shape) (run lower) (saturate fuse)))\n"
        "  (saturate cleanup))"
    )
    lines.append("(print-size)")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# containers
# ---------------------------------------------------------------------------

CONT_NODES = 800  # graph nodes whose reachable sets grow
CONT_EDGES = 2000
CONT_MUTUAL = 100  # edges that also get their reverse: their ends are unioned
CONT_SEED = 0x9E3779B97F4A7C15
CONT_VARS = 60  # variables of the map-environment interpreter
CONT_STMTS = 300  # statements in its program
CONT_ENVS = 20  # initial environments the program runs from


def gen_containers(nodes=CONT_NODES, edges=CONT_EDGES, mutual=CONT_MUTUAL, seed=CONT_SEED,
                   variables=CONT_VARS, stmts=CONT_STMTS, envs=CONT_ENVS):
    """Sets of e-classes that grow while their members are unioned, and an interpreter whose
    environments are maps."""
    rng = Lcg(seed)
    es = set()
    while len(es) < edges:
        a, b = rng.below(nodes), rng.below(nodes)
        if a != b:
            es.add((a, b))
    pairs = sorted(es)
    for i in range(mutual):
        a, b = pairs[rng.below(len(pairs))]
        es.add((b, a))
    out = [
        ";; containers: (1) every node's set of reachable nodes, a Set of e-classes merged by",
        ";; set-union, while nodes joined by edges both ways are unioned (each union re-canonicalizes",
        ";; the sets holding them) and sets that contain their own node key Cluster nodes (rows",
        ";; keyed by sets that become equal merge); (2) an interpreter whose environments are",
        ";; Map String i64, run over a straight-line program from several initial environments.",
        "(datatype Node (N i64))",
        "(sort NodeSet (Set Node))",
        "(relation edge (i64 i64))",
        "(function reach (i64) NodeSet :merge (set-union old new))",
        "(constructor Cluster (NodeSet) Node)",
        "",
        '(rule ((edge a b)) ((set (reach a) (set-of (N b)))) :name "reach-base")',
        '(rule ((edge a b) (= s (reach b))) ((set (reach a) s)) :name "reach-step")',
        '(rule ((edge a b) (edge b a)) ((union (N a) (N b))) :name "mutual")',
        '(rule ((= s (reach a)) (set-contains s (N a))) ((Cluster s)) :name "cycle")',
        "",
    ]
    out.extend(f"(edge {a} {b})" for a, b in sorted(es))
    out += [
        "",
        "(sort Env (Map String i64))",
        "(datatype Prog (Assign String i64) (Copy String String) (Seq Prog Prog))",
        "(relation todo (Prog Env))",
        "(function result (Prog Env) Env :no-merge)",
        "",
        '(rule ((todo (Assign x v) env)) ((set (result (Assign x v) env) (map-insert env x v))) :name "assign")',
        '(rule ((todo (Copy x y) env) (= v (map-get env y)))',
        '      ((set (result (Copy x y) env) (map-insert env x (+ v 1)))) :name "copy")',
        '(rule ((todo (Copy x y) env) (map-not-contains env y))',
        '      ((set (result (Copy x y) env) env)) :name "copy-unbound")',
        '(rule ((todo (Seq a b) env)) ((todo a env)) :name "seq-first")',
        '(rule ((todo (Seq a b) env) (= e1 (result a env))) ((todo b e1)) :name "seq-then")',
        '(rule ((todo (Seq a b) env) (= e1 (result a env)) (= e2 (result b e1)))',
        '      ((set (result (Seq a b) env) e2)) :name "seq-done")',
        "",
    ]
    prog = None
    for i in range(stmts):
        x = f'"v{rng.below(variables)}"'
        stmt = (f"(Assign {x} {rng.below(100)})" if rng.below(3) == 0
                else f'(Copy {x} "v{rng.below(variables)}")')
        prog = stmt if prog is None else f"(Seq {prog} {stmt})"
    out.append(f"(let $prog {prog})")
    for e in range(envs):
        env = "(map-empty)"
        for v in range(0, variables, 1 + e % 4):
            env = f'(map-insert {env} "v{v}" {e * 1000 + v})'
        out.append(f"(todo $prog {env})")
    out += [
        "",
        "(run-schedule (saturate (run)))",
        "(print-size)",
    ]
    return "\n".join(out) + "\n"


GENERATORS = {
    "arith_blowup": gen_arith_blowup,
    "datalog_tc": gen_datalog_tc,
    "tensor_luminal": gen_tensor_luminal,
    "tensor_rules": gen_tensor_rules,
    "arith_grow": gen_arith_grow,
    "containers": gen_containers,
}


def write_programs(out_dir=DEFAULT_OUT, only=None):
    """Write the programs into out_dir (only rewriting changed files); return their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name, gen in GENERATORS.items():
        if only and name != only:
            continue
        text = gen()
        path = os.path.join(out_dir, name + ".egg")
        old = None
        if os.path.exists(path):
            with open(path) as f:
                old = f.read()
        if old != text:
            with open(path, "w") as f:
                f.write(text)
        paths[name] = path
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--only", choices=sorted(GENERATORS), help="generate one program")
    ap.add_argument("--print", dest="show", choices=sorted(GENERATORS), help="print one program")
    args = ap.parse_args()
    if args.show:
        sys.stdout.write(GENERATORS[args.show]())
        return
    for name, path in write_programs(args.out, args.only).items():
        print(f"{name}: {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
