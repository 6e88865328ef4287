"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/).

    python tests/fuzz/make_seeds.py            # rewrites tests/fuzz/corpus/*

corpus/gguf (no .gguf suffix: the repository ignores *.gguf so that no real
model is committed by accident): tiny but complete models that adil_model_load accepts (llama with
a SentencePiece and with a byte-level BPE tokenizer, gemma3), in mixed weight
types, plus two files that are no model: one tensor of every weight type the
reader knows, and a GGUF v2 image with every metadata value type.  The model
shapes are tests/make_tiny_models.py's, shrunk so that each file stays under
20 KB; its helpers write the hyperparameters, tokenizer and tensors.
corpus/tokenizer: byte 0 chooses the tokenizer and flags (see
fuzz_tokenizer.c), the rest is text.
corpus/stub_script: the repository's stub scripts and a few JSON edge cases.
corpus/grammar: a schema, a NUL byte, a document (see fuzz_grammar.c).

Deterministic: the same files on every run.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from make_tiny_models import (  # noqa: E402  (the tests folder is not a package)
    TinySpec,
    _matrices,
    _norms,
    _write_hparams,
    _write_tokenizer,
    encode_matrix,
)

MAX_SEED_BYTES = 20 * 1024


# ---- gguf ----------------------------------------------------------------------


def _bpe_tokenizer(w: gguf.GGUFWriter, n_vocab: int) -> None:
    """A llama-3 style byte-level BPE vocabulary: the 256 byte symbols,
    merges that spell a few words, control tokens, padded to n_vocab."""
    byte_cp = []
    nxt = 0x100
    for b in range(256):
        printable = 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE
        byte_cp.append(chr(b) if printable else chr(nxt))
        nxt += not printable
    tokens, merges = list(byte_cp), []
    for word in (" the", " hello", " world", "ing"):
        left = byte_cp[ord(word[0])]
        for ch in word[1:]:
            right = byte_cp[ord(ch)]
            merges.append(f"{left} {right}")
            left += right
            tokens.append(left)
    types = [1] * len(tokens)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tokens += specials
    types += [3] * len(specials)
    while len(tokens) < n_vocab:
        tokens.append(f"<|reserved_{len(tokens)}|>")
        types.append(3)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index("<|begin_of_text|>"))
    w.add_eos_token_id(tokens.index("<|eot_id|>"))


def write_model(path: Path, spec: TinySpec, matrix_type: T, embd_type: T, bpe: bool = False,
                chat_template: str | None = None) -> None:
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(str(path), spec.arch)
    _write_hparams(w, spec)
    if bpe:
        _bpe_tokenizer(w, spec.n_vocab)
    else:
        _write_tokenizer(w, spec)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    for name, rows, cols, std in _matrices(spec):
        qtype = embd_type if name in ("token_embd.weight", "output.weight") else matrix_type
        values = (rng.standard_normal((rows, cols)) * std).astype(np.float32)
        data = encode_matrix(values, qtype, rng)
        w.add_tensor(name, data, raw_dtype=qtype if qtype not in (T.F32, T.F16) else None)
    for name, n in _norms(spec):
        w.add_tensor(name, rng.uniform(0.5, 1.5, size=n).astype(np.float32))
    if bpe and spec.arch == "llama":  # llama 3's per-frequency RoPE divisors
        factors = np.linspace(1.0, 8.0, spec.head_dim // 2, dtype=np.float32)
        w.add_tensor("rope_freqs.weight", factors)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_all_weight_types(path: Path) -> None:
    """One small tensor per weight type, general.alignment 64; no model."""
    rng = np.random.default_rng(1)
    w = gguf.GGUFWriter(str(path), "none")
    w.add_custom_alignment(64)
    for qtype in (T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q5_0, T.Q4_K, T.Q5_K, T.Q6_K):
        elems, size = gguf.GGML_QUANT_SIZES[qtype]
        cols = 256 if elems == 256 else 32
        raw = rng.integers(0, 256, size=(2, cols // elems * size), dtype=np.uint8)
        w.add_tensor(f"t.{qtype.name.lower()}", raw, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_all_value_types(path: Path) -> None:
    """Every metadata value type, arrays of each, a nested array; then the
    version field patched to 2 (v2 and v3 share this layout)."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint8("v.u8", 200)
    w.add_int8("v.i8", -100)
    w.add_uint16("v.u16", 60000)
    w.add_int16("v.i16", -30000)
    w.add_uint32("v.u32", 4000000000)
    w.add_int32("v.i32", -2000000000)
    w.add_float32("v.f32", 1.5)
    w.add_bool("v.bool", True)
    w.add_string("v.str", "h\u00e9llo")
    w.add_string("v.empty", "")
    w.add_uint64("v.u64", 2**63 + 5)
    w.add_int64("v.i64", -(2**62))
    w.add_float64("v.f64", -2.25)
    w.add_array("v.arr_i32", [1, -2, 3])
    w.add_array("v.arr_f32", [0.5, 1.5])
    w.add_array("v.arr_bool", [True, False])
    w.add_array("v.arr_str", ["a", "", "ccc"])
    w.add_array("v.arr_empty", [])
    w.add_array("v.arr_nested", [[1, 2], [3]])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    data = bytearray(path.read_bytes())
    data[4:8] = (2).to_bytes(4, "little")
    path.write_bytes(bytes(data))


def write_gguf_seeds(out: Path) -> None:
    llama = TinySpec(arch="llama", n_vocab=280, n_embd=4, n_layer=1, n_head=2, n_head_kv=1,
                     head_dim=2, n_ff=8, n_ctx_train=64, tied_output=False)
    write_model(out / "llama_spm_f16", llama, T.F16, T.F16)
    gemma = TinySpec(arch="gemma3", n_vocab=280, n_embd=32, n_layer=1, n_head=2, n_head_kv=1,
                     head_dim=16, n_ff=32, n_ctx_train=64, sliding_window=4)
    write_model(out / "gemma3_q4_0", gemma, T.Q4_0, T.Q4_0,
                chat_template="{% for m in messages %}{{ m['content'] }}{% endfor %}")
    llama3 = replace(llama, n_vocab=280, n_embd=32, n_head=4, head_dim=8, n_ff=32, rms_eps=1e-5,
                     tied_output=True)
    write_model(out / "llama_bpe_q8_0", llama3, T.Q4_0, T.Q8_0, bpe=True)
    write_all_weight_types(out / "weight_types")
    write_all_value_types(out / "value_types_v2")


# ---- tokenizer ---------------------------------------------------------------------

# (flags byte, text): flags (bits 5-7) * 4 + (bits 0-1) choose the tokenizer,
# modulo 13 (0/1 SentencePiece with/without the space prefix, 2 llama-bpe,
# 3 qwen2, 4 gpt-4o, 5 tekken, 6 deepseek-llm, 7 smollm, 8 deepseek-coder,
# 9 deepseek-v3, 10 phi-2, 11 qwen35, 12 default), bit 2 parse_special, bits
# 3-4 add_bos.
TOKENIZER_SEEDS = {
    "spm_plain": (0x00, "Hello world, the model is tiny."),
    "spm_turns": (0x04, "<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n"),
    "spm_blank_runs": (0x01, "a\n\n\nb\t\tc  d    e\u2581f<b>g</b>"),
    "spm_unicode": (0x09, "caf\u00e9 na\u00efve \u00fcber \u65e5\u672c\u8a9e \U0001F600 "
                          "\u043f\u0440\u0438\u0432\u0435\u0442"),
    "bpe_chat": (0x06, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"),
    "bpe_numbers": (0x02, "In 2024, 1234567 people don't say 'hello'... x==y"),
    "bpe_unicode": (0x1A, " caf\u00e9\t\u65e5\u672c\u8a9e\r\n\U0001F600<tool_call>"),
    "qwen_digits": (0x03, "12345 67 8 and 3.14159 they're 'we'll'"),
    "smollm_digits": (0x23, "x 12345 it's IT'S a  b\n\n c ?! 3.14\t"),
    "gpt4o_cases": (0x20, "HELLOworld helloWORLD \u00c9COLE \u00e9cole DON'T don't "
                          "x//\n\n/y e\u0301 12345 \u0391\u03b8\u03ae\u03bd\u03b1"),
    "tekken_cases": (0x29, "McDONALD's iPhone XMLHttpRequest 2024\u3000full\u3000width \u01c5emal"),
    "deepseek_llm_mixed": (0x22, "Hello, World!\n  123 \u4e2d\u6587 \uff01\u3001 "
                                 "\u2018q\u2019 \u10a0\u10d0 \U00010400 ab  "),
    "deepseek_coder_code": (0x40, "def f(x):\r\n    return x+1  # \u6ce8\u91ca\n\uac00\ub098"),
    "deepseek_v3_marks": (0x41, "#include <stdio.h> \u0928\u092e\u0938\u094d\u0924\u0947 "
                                "\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8 1234567 \u200d\u0301x"),
    "qwen35_marks": (0x43, "e\u0301 cafe\u0301s \u0301\u0302 \u0928\u092e\u0938\u094d\u0924\u0947 "
                           "Vie\u0301\u0302t 123 ?!\u0301"),
    "default_punct": (0x60, "a+=b<<2; x|y ~z^w $5 12345678 1,234.5 <|eot_id|> 'quoted'!?"),
    "phi2_blanks": (0x42, "a  b\t\tc \u00a0 \u2028 \x0b\x0c \x1c\x1d it's 123"),
}
TOKENIZER_BYTES_SEEDS = {
    "invalid_utf8": bytes([0x07])
    + b"ok \xff\xfe \xc3 \xe2\x96 \xf0\x9f\x98 \xed\xa0\x80 \xc0\x80 end",
    "spm_invalid_utf8": bytes([0x11]) + b"\xf8\x19) \xe2\x96\x81x\xe2\x96 y",
}


def write_tokenizer_seeds(out: Path) -> None:
    for name, (flags, text) in TOKENIZER_SEEDS.items():
        (out / name).write_bytes(bytes([flags]) + text.encode())
    for name, data in TOKENIZER_BYTES_SEEDS.items():
        (out / name).write_bytes(data)


# ---- stub scripts ----------------------------------------------------------------------

STUB_SEEDS = {
    "edge_numbers.json": '{"turns": [{"text": "x"}], "token_delay_ms": 0, "context_length": 1e3, '
                         '"faults": [{"on_call": 9007199254740993, "status": "busy"}]}',
    "edge_strings.json": '{"turns": [{"text": '
                         '"\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/\\b\\f\\r\\t\\u0000", '
                         '"tool_call": {"name": "t\\u00f6ol", "arguments_json": "{not json"}}]}',
    "edge_nesting.json": '{"turns": [{"tool_call": {"name": "n", "arguments": '
                         '[[[[{"a": [null, true, false, -0.5e-3, 0, {}]}]]]]}}, {}]}',
    "not_ready.json": '{"turns": [{"text": ""}], "faults": [{"not_ready_ms": 3600000}, '
                      '{"on_call": 2, "late_answer": true}, '
                      '{"on_call": 1, "status": "capability"}]}',
}


def write_stub_seeds(out: Path) -> None:
    for src in sorted((ROOT / "tests" / "stub_scripts").glob("*.json")):
        shutil.copyfile(src, out / src.name)
    for src in sorted((ROOT / "tests" / "native" / "data").glob("stub_*.json")):
        shutil.copyfile(src, out / src.name)
    for name, text in STUB_SEEDS.items():
        (out / name).write_text(text)


# ---- grammar: <schema> NUL <document> ---------------------------------------------------

GRAMMAR_SEEDS = {
    "person": ('{"type":"object","properties":{"name":{"type":"string","maxLength":8},'
               '"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array",'
               '"items":{"enum":["a","b",1.5]},"maxItems":3}},"required":["name"],'
               '"additionalProperties":false}',
               '{"name":"\\u00e9\xc3\xa9","age":12,"tags":["a",1.5]}'),
    "any": ("{}", '{"k":[true,null,-0.5,"x\\ud83d\\ude00"],"n":{"m":12}}'),
    "number": ('{"type":["number","null"],"minimum":-1,"maximum":2.5}', "-0.25"),
    "tools": ('{"x-adil-tools":[{"name":"get","parameters":{"type":"object","properties":'
              '{"q":{"type":"string"}}}}],"x-adil-trigger":"<t>","x-adil-end":"</t>"}',
              'hi <t>{"name": "get", "arguments": {"q": "x"}}</t> ok'),
    "bad_schema": ('{"type":"object","properties":{"a":{"$ref":"#"}}}', "{}"),
}


def write_grammar_seeds(out: Path) -> None:
    for name, (schema, doc) in GRAMMAR_SEEDS.items():
        (out / name).write_bytes(schema.encode() + b"\0" + doc.encode("utf-8", "surrogateescape"))


# ---- all ----------------------------------------------------------------------------------


def main() -> None:
    corpus = HERE / "corpus"
    writers = {"gguf": write_gguf_seeds, "tokenizer": write_tokenizer_seeds,
               "stub_script": write_stub_seeds, "grammar": write_grammar_seeds}
    for name, write in writers.items():
        out = corpus / name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        write(out)
        for f in sorted(out.iterdir()):
            size = f.stat().st_size
            if size > MAX_SEED_BYTES:
                sys.exit(f"{f}: {size} bytes, expected at most {MAX_SEED_BYTES}")
            print(f"{size:6d}  {f.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
