"""Training data: a token stream (seeded synthetic, or the pinned token shards) cut into
windows of seq_len + 1 tokens, served in a seeded, optionally shuffled order.

Mirrors the native engine (validators/engines/native/token_data.cc): the same synthetic
stream, the same SplitMix64 Fisher-Yates permutation per epoch, the last eval windows
reserved for evaluation. The position is global: (epoch, cursor) counts windows of the whole
job, and each optimizer micro-step takes world_size * micro_batch consecutive windows of
which rank r reads its slice, so the position means the same at any world size.
"""

import struct

import torch

try:
    import numpy as _np
except ImportError:  # torch runs without numpy; the synthetic stream then reads in pure Python
    _np = None

from . import pinned
from .protocol import EngineError

MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _splitmix64_array(x):
    """splitmix64 over a numpy uint64 array (its arithmetic wraps modulo 2**64, as C's)."""
    x = x + _np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> _np.uint64(30))) * _np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _np.uint64(27))) * _np.uint64(0x94D049BB133111EB)
    return x ^ (x >> _np.uint64(31))


class SyntheticTokens:
    """Blocks of 8 tokens: a seeded hash, then an arithmetic run (learnable)."""

    def __init__(self, seed, vocab, length):
        self.seed, self.vocab, self.length = seed & MASK, vocab, length

    def size(self):
        return self.length

    def read(self, start, n):
        """Tokens start .. start+n-1. Vectorised with numpy where it is installed: in pure
        Python a window of 1025 tokens costs about 3 ms, which a framework's in-step data
        loading (the Trainer's DataLoader) adds to every micro-batch of the measured step."""
        if _np is None:
            return self._read_python(start, n)
        p = _np.arange(start, start + n, dtype=_np.uint64)
        block = _splitmix64_array(_np.uint64(self.seed) ^ _splitmix64_array(p // _np.uint64(8))) % _np.uint64(self.vocab)
        return ((block + _np.uint64(7) * (p % _np.uint64(8))) % _np.uint64(self.vocab)).tolist()

    def _read_python(self, start, n):
        out = []
        for p in range(start, start + n):
            block = splitmix64(self.seed ^ splitmix64(p // 8)) % self.vocab
            out.append((block + 7 * (p % 8)) % self.vocab)
        return out

    def describe(self):
        return "synthetic token stream (%d tokens)" % self.length


VOCAB_SCAN_TOKENS = 1 << 22  # tokens per step of the vocabulary scan (at most 128 MiB as int64)


def first_out_of_vocab(data, width, vocab):
    """(index, token) of the first little-endian `width`-byte token >= vocab in `data` (a
    writable buffer: the shard's private mapping), or None. Vectorised over the mapping in
    bounded steps; the bytes are combined explicitly, so the host's byte order does not matter."""
    raw = torch.frombuffer(data, dtype=torch.uint8)
    tokens = len(data) // width
    for start in range(0, tokens, VOCAB_SCAN_TOKENS):
        stop = min(tokens, start + VOCAB_SCAN_TOKENS)
        chunk = raw[start * width:stop * width].view(-1, width).to(torch.int64)
        value = chunk[:, 0].clone()
        for k in range(1, width):
            value |= chunk[:, k] << (8 * k)
        bad = (value >= vocab).nonzero()
        if bad.numel():
            i = int(bad[0])
            return start + i, int(value[i])
    return None


class ShardTokens:
    """Little-endian uint16/uint32 shards, each verified at its point of use, concatenated and
    read from their mappings. Every token of every shard is checked against the vocabulary
    before training (as token_data.cc), not only those the windows read: a shard the lock
    pins holds no token the model cannot embed."""

    def __init__(self, files, width, vocab, emit):
        self.vocab, self.width, self.parts, self.total = vocab, width, [], 0
        self.code = "H" if width == 2 else "I"
        for entry in files:
            data = pinned.open_verified(entry, emit)
            if len(data) == 0 or len(data) % width:
                raise EngineError("input", "%s: %d bytes is not a whole number of %d-byte tokens" % (entry["path"], len(data), width))
            bad = first_out_of_vocab(data, width, vocab)
            if bad is not None:
                raise EngineError("input", "%s: token %d at index %d is outside the vocabulary (%d)" % (entry["path"], bad[1], bad[0], vocab))
            count = len(data) // width
            self.parts.append((entry["path"], self.total, count, data))
            self.total += count

    def size(self):
        return self.total

    def read(self, start, n):
        out, p, end = [], start, start + n
        for _, first, count, data in self.parts:
            if p >= end:
                break
            if p >= first + count:
                continue
            take = min(end, first + count) - p
            out.extend(struct.unpack_from("<%d%s" % (take, self.code), data, (p - first) * self.width))
            p += take
        return out

    def describe(self):
        return "%d token shard(s), %d tokens" % (len(self.parts), self.total)


def token_source(spec, emit):
    d, vocab = spec["data"], spec["model"]["vocab_size"]
    if d["kind"] == "synthetic":
        return SyntheticTokens(d["seed"], vocab, d["length"])
    return ShardTokens(d["files"], d["bytes_per_token"], vocab, emit)


class WindowLoader:
    def __init__(self, source, seq_len, seed, shuffle, eval_windows, min_train_windows):
        self.source, self.seq_len, self.seed, self.shuffle = source, seq_len, seed & MASK, shuffle
        self.eval_windows = eval_windows
        windows = (source.size() - 1) // seq_len if source.size() > 1 else 0
        self.train_windows = windows - eval_windows
        if self.train_windows < min_train_windows:
            raise EngineError("input", "%s holds %d windows of %d tokens; need %d (a global micro-batch + eval windows)"
                              % (source.describe(), windows, seq_len + 1, min_train_windows + eval_windows))
        self.epoch, self.cursor, self.order = 0, 0, []
        self._reshuffle()

    def _reshuffle(self):
        self.order = []
        if not self.shuffle:
            return
        order = list(range(self.train_windows))
        state = splitmix64(self.seed ^ (0x5EED0000 + self.epoch))
        for i in range(len(order), 1, -1):  # Fisher-Yates, as token_data.cc
            state = splitmix64(state)
            j = state % i
            order[i - 1], order[j] = order[j], order[i - 1]
        self.order = order

    def next_windows(self, count):
        out = []
        for _ in range(count):
            if self.cursor == self.train_windows:
                self.epoch, self.cursor = self.epoch + 1, 0
                self._reshuffle()
            out.append(self.order[self.cursor] if self.shuffle else self.cursor)
            self.cursor += 1
        return out

    def window(self, index):
        return self.source.read(index * self.seq_len, self.seq_len + 1)

    def batch(self, windows, device):
        """(inputs, targets) LongTensors [len(windows), seq_len] on `device`."""
        rows = [self.window(w) for w in windows]
        tokens = torch.tensor(rows, dtype=torch.long)
        return tokens[:, :-1].contiguous().to(device), tokens[:, 1:].contiguous().to(device)

    def eval_batch(self, index, micro_batch, device):
        windows = [self.train_windows + (index * micro_batch + row) % self.eval_windows for row in range(micro_batch)]
        return self.batch(windows, device)

    def state(self):
        return {"epoch": self.epoch, "cursor": self.cursor, "seed": self.seed, "shuffle": self.shuffle,
                "train_windows": self.train_windows, "seq_len": self.seq_len}

    def restore(self, state):
        if not isinstance(state, dict) or any(state.get(k) != getattr(self, k) for k in ("seed", "shuffle", "train_windows", "seq_len")):
            raise EngineError("checkpoint", "data-loader state was saved for different data (%r)" % (state,))
        epoch, cursor = state.get("epoch"), state.get("cursor")
        if not (isinstance(epoch, int) and isinstance(cursor, int) and epoch >= 0 and 0 <= cursor <= self.train_windows):
            raise EngineError("checkpoint", "data-loader state has a bad position (%r)" % (state,))
        self.epoch, self.cursor = epoch, cursor
        self._reshuffle()

    def describe(self):
        return "%s, %d training windows of %d tokens%s, %d eval windows" % (
            self.source.describe(), self.train_windows, self.seq_len + 1, " (shuffled)" if self.shuffle else "", self.eval_windows)


def loader_for(spec, emit, world_size):
    t = spec["training"]
    source = token_source(spec, emit)
    return WindowLoader(source, t["seq_len"], spec["seed"], t["shuffle"], spec["eval_batches"] * t["micro_batch"],
                        t["micro_batch"] * world_size)
