"""Writes the tiny test models in tests/models/ (run by hand with the training venv:
`target/training/venv/bin/python tests/models/make_tiny.py`; nothing is downloaded).

A randomly initialised 2-layer BERT (hidden size 32; weights drawn wide, so that its vectors
differ from text to text) with a word-piece vocabulary of the test
texts' words, saved the way sentence-transformers saves any model, in two exports sharing its
weights: `tiny-cls` (CLS pooling, Normalize, query and document prompts) and `tiny-last`
(last-token pooling, no prompts). Beside each, `expected.json`: the vectors
sentence-transformers itself gives for the test texts, as queries and as documents, which the
Rust tests compare with the engine's (tests/models.rs).
"""

import json
import shutil
import sys
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer, models
from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
from tokenizers.models import WordPiece
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

HERE = Path(__file__).resolve().parent
TEXTS = [
    "send an email to a colleague",
    "weather forecast for tomorrow in Paris",
    "convert a pdf file to text",
    "list open pull requests",
    "Book a table for two at an Italian restaurant tonight",
    "translate this sentence into German",
]
WORDS = sorted({w for t in TEXTS + ["query: ", "passage: ", "search the tool catalogue for files"]
                for w in t.lower().replace(":", " : ").split()})
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def tokenizer() -> PreTrainedTokenizerFast:
    pieces = SPECIAL + WORDS + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"] + list("abcdefghijklmnopqrstuvwxyz:.")
    vocab = {t: i for i, t in enumerate(dict.fromkeys(pieces))}
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=64)


class Encoder(torch.nn.Module):
    """The BERT with keyword inputs and its token states as the one output."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state


def export(hf_dir: Path, out: Path) -> None:
    model = Encoder(BertModel.from_pretrained(hf_dir)).eval()
    ids = torch.tensor([[2, 7, 8, 3], [2, 9, 3, 0]])
    mask = (ids != 0).long()
    torch.onnx.export(model, (ids, mask, torch.zeros_like(ids)), out,
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"],
                      dynamic_axes={n: {0: "batch", 1: "tokens"} for n in
                                    ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]},
                      opset_version=17, dynamo=False)


def main() -> None:
    torch.manual_seed(7)
    work = HERE / "_work"
    shutil.rmtree(work, ignore_errors=True)
    tok = tokenizer()
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, pad_token_id=0,
                        initializer_range=0.6)
    BertModel(config).save_pretrained(work / "hf")
    tok.save_pretrained(work / "hf")
    exports = {
        "tiny-cls": ("cls", True, {"query": "query: ", "document": "passage: "}),
        "tiny-last": ("lasttoken", False, {}),
    }
    for name, (pooling, normalize, prompts) in exports.items():
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        body = models.Transformer(str(work / "hf"), max_seq_length=64)
        mods = [body, models.Pooling(32, pooling_mode=pooling)] + ([models.Normalize()] if normalize else [])
        st = SentenceTransformer(modules=mods, prompts=prompts, default_prompt_name=None)
        st.save(str(out))
        for junk in ["model.safetensors", "README.md"]:
            (out / junk).unlink(missing_ok=True)
        export(work / "hf", out / "model.onnx")
        kw = lambda p: {"prompt_name": p} if p in prompts else {}
        expected = {
            "texts": TEXTS,
            "query": st.encode(TEXTS, **kw("query")).tolist(),
            "document": st.encode(TEXTS, **kw("document")).tolist(),
        }
        (out / "expected.json").write_text(json.dumps(expected) + "\n")
        print(f"{out}: {sorted(p.name for p in out.iterdir())}", file=sys.stderr)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
