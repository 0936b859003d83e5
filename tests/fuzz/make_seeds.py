#!/usr/bin/env python3
"""Writes the synthetic seed inputs of the fuzz targets (tests/fuzz/seeds/<target>/): small,
well-formed examples of each format that the fuzzer mutates from. Deterministic; run it again
after changing it and commit what it writes. The loaders and report targets are seeded at run
time from the examples, the bad-input corpus and the report fixtures instead (run_fuzz.sh).

Usage: make_seeds.py SEEDS_DIR"""
import hashlib
import json
import os
import struct
import sys

OUT = sys.argv[1]


def write(target, name, data):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(OUT, target, name), "wb") as f:
        f.write(data)


# ---- gpu_binary: 64-bit little-endian ELF files with .nv_fatbin and .hip_fatbin sections ----

def elf(sections):
    """An ELF with the given (name, bytes) sections, a .shstrtab and the section table last."""
    names = b"\0"
    offsets = []
    for name, _ in sections + [(".shstrtab", b"")]:
        offsets.append(len(names))
        names += name.encode() + b"\0"
    body = b""
    placed = []
    cursor = 64
    for (name, data), name_at in zip(sections + [(".shstrtab", names)], offsets):
        pad = (-cursor) % 8
        body += b"\0" * pad
        cursor += pad
        placed.append((name_at, cursor, len(data)))
        body += data
        cursor += len(data)
    pad = (-cursor) % 8
    body += b"\0" * pad
    shoff = cursor + pad
    table = b"\0" * 64  # the null section
    for name_at, offset, size in placed:
        table += struct.pack("<IIQQQQIIQQ", name_at, 1, 0, 0, offset, size, 0, 0, 8, 0)
    shnum = len(placed) + 1
    header = (b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9 +
              struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, shnum, shnum - 1))
    return header + body + table


def fatbin_entry(kind, arch, major, minor, payload):
    padded = payload + b"\0" * ((-len(payload)) % 8)
    header = struct.pack("<HHIQIIHHI", kind, 0x0101, 64, len(padded), len(payload), 0, minor, major, arch)
    return header + b"\0" * (64 - len(header)) + padded


def fatbin(entries):
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def offload_bundle(ids):
    count = len(ids)
    table_size = 24 + 8 + sum(24 + len(i) for i in ids)
    table = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", count)
    code = b""
    for i in ids:
        blob = b"\x7fELF code for " + i.encode()
        table += struct.pack("<QQQ", table_size + len(code), len(blob), len(i)) + i.encode()
        code += blob
    return table + code


cuda = fatbin([fatbin_entry(2, 80, 1, 7, b"\x7fELF sm_80 cubin"),
               fatbin_entry(2, 90, 1, 7, b"\x7fELF sm_90 cubin"),
               fatbin_entry(1, 90, 9, 0, b".version 9.0\n.target sm_90\n")])
write("gpu_binary", "cuda-sm80-sm90-ptx90.so", elf([(".text", b"\xc3" * 16), (".nv_fatbin", cuda)]))
write("gpu_binary", "cuda-two-containers.so",
      elf([(".nv_fatbin", fatbin([fatbin_entry(2, 86, 1, 7, b"a")]) + b"\0" * 8 +
            fatbin([fatbin_entry(1, 80, 8, 8, b"b")]))]))
write("gpu_binary", "hip-gfx90a-gfx942.so",
      elf([(".hip_fatbin", offload_bundle(["host-x86_64-unknown-linux--",
                                           "hipv4-amdgcn-amd-amdhsa--gfx90a",
                                           "hipv4-amdgcn-amd-amdhsa--gfx942:xnack-"]))]))
write("gpu_binary", "host-only.so", elf([(".text", b"\xc3" * 32), (".data", b"\1" * 16)]))


# ---- safetensors: whole files ----

def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


write("safetensors", "two-tensors.safetensors",
      safetensors([("model.norm.weight", "F32", [2], struct.pack("<2f", 1.0, 2.0)),
                   ("model.embed_tokens.weight", "BF16", [2, 2], b"\x80\x3f" * 4)],
                  {"format": "pt"}))
write("safetensors", "empty-and-scalar.safetensors",
      safetensors([("empty", "F16", [0, 3], b""), ("scalar", "I64", [], struct.pack("<q", 7)),
                   ("flag", "BOOL", [1], b"\1")]))


# ---- checkpoint: manifest.json ----

def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


write("checkpoint", "manifest-v2.json", json.dumps({
    "format": "trainlock.checkpoint/v2", "step": 4,
    "files": [{"path": "model.safetensors", "role": "model", "sha256": sha("m"), "size": 4096},
              {"path": "optimizer-00001-of-00002.safetensors", "role": "optimizer",
               "sha256": sha("o1"), "size": 8192},
              {"path": "optimizer-00002-of-00002.safetensors", "role": "optimizer",
               "sha256": sha("o2"), "size": 64}],
    "state": {"rng": {"cpu": "00ff", "cuda": []}, "data_loader": {"epoch": 0, "cursor": 16},
              "loss_scaler": None, "lock_sha256": sha("lock")}}, indent=2))
write("checkpoint", "manifest-v1.json", json.dumps({
    "format": "trainlock.checkpoint/v1", "step": 2,
    "files": [{"path": "model.safetensors", "sha256": sha("m"), "size": 1},
              {"path": "optimizer.safetensors", "sha256": sha("o"), "size": 2}]}))


# ---- registry: a selector byte (0 manifest or index, 1 token answer, 2 docker config) ----

def digest(text):
    return "sha256:" + sha(text)


write("registry", "index.json", b"\0" + json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
    "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest("amd64"), "size": 1,
         "platform": {"os": "linux", "architecture": "amd64"}},
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest("arm64"), "size": 1,
         "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest("att"), "size": 1,
         "platform": {"os": "unknown", "architecture": "unknown"}}]}).encode())
write("registry", "manifest.json", b"\0" + json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest("c"), "size": 2},
    "layers": []}).encode())
write("registry", "token.json", b"\1" + b'{"token": "eyJhbGciOi.x.y", "expires_in": 300}')
write("registry", "docker-config.json",
      b"\2" + b'{"auths": {"https://index.docker.io/v1/": {"auth": "YWxpY2U6czNjcmV0"}, '
              b'"registry.example:5000": {"auth": "Ym9iOnB3"}}}')


# ---- hub: the revision answer ----

write("hub", "revision.json", json.dumps({
    "sha": "0123456789abcdef0123456789abcdef01234567",
    "siblings": [{"rfilename": "config.json", "size": 20},
                 {"rfilename": "model.safetensors", "size": 4096,
                  "lfs": {"sha256": sha("model"), "size": 4096}},
                 {"rfilename": "tokenizer/vocab.json", "size": 3}]}))


# ---- pep503 and pep691: a simple API page as HTML and as JSON ----

WHEEL = "demo_pkg-1.0.0-py3-none-any.whl"
write("pep503", "page.html", (
    '<!DOCTYPE html><html><body>\n'
    f'<a href="../../files/{WHEEL}#sha256={sha("wheel")}" data-requires-python="&gt;=3.8"'
    f' data-core-metadata="sha256={sha("metadata")}" data-yanked="">{WHEEL}</a><br/>\n'
    '<a href="https://files.example/x-2.0-py3-none-any.whl">x&#45;2.0&amp;</a>\n'
    '</body></html>\n').encode())
write("pep691", "page.json", json.dumps({
    "meta": {"api-version": "1.1"}, "name": "demo-pkg",
    "files": [{"filename": WHEEL, "url": f"/files/{WHEEL}", "hashes": {"sha256": sha("wheel")},
               "requires-python": ">=3.8", "core-metadata": {"sha256": sha("metadata")},
               "yanked": "broken"}]}).encode())

# ---- debian_index: a Debian archive's Packages index (two versions of one package) ----

write("debian_index", "Packages", "".join(
    f"Package: libfoo\nVersion: {v}\nArchitecture: amd64\n"
    f"Filename: pool/main/libf/libfoo/libfoo_{v.split(':')[-1]}_amd64.deb\nSHA256: {sha(v)}\n"
    "Description: a library\n continued line\n\n" for v in ("1:1.0~rc1-1", "1.0-2")))

# ---- layer: a container layer's tar (a directory, a file, a symlink, a pax long path) ----

def layer_tar():
    import io
    import tarfile
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, data in (("usr/", tarfile.DIRTYPE, b""), ("usr/bin/tool", tarfile.REGTYPE, b"tool v1\n"),
                                 ("usr/bin/alias", tarfile.SYMTYPE, b""),
                                 ("opt/" + "d" * 120 + "/file.py", tarfile.REGTYPE, b"print(1)\n")):
            info = tarfile.TarInfo(name)
            info.type, info.size, info.mtime, info.mode = kind, len(data), 1700000000, 0o755
            if kind == tarfile.SYMTYPE:
                info.linkname = "tool"
            tar.addfile(info, io.BytesIO(data) if data else None)
    return out.getvalue()


write("layer", "layer.tar", layer_tar())
# The same tar as a registry serves it: one gzip member, and two (as a layer written in parts).
import gzip  # noqa: E402
write("layer", "layer.tar.gz", gzip.compress(layer_tar(), mtime=0))
write("layer", "layer-2-members.tar.gz",
      gzip.compress(layer_tar()[:1024], mtime=0) + gzip.compress(layer_tar()[1024:], mtime=0))

# ---- layer_gzip: a selector byte (odd: two gzip members, cut at its share) and a tar ----

write("layer_gzip", "one-member", b"\x00" + layer_tar())
write("layer_gzip", "two-members", b"\x81" + layer_tar())

# ---- shell_quote: values a generated Slurm, Prolog or NPD script carries ----

for i, value in enumerate(("/shared/trainlock/reports", "/opt/trainlock/bin/trainlock",
                           "it's here", "a b\tc", "$(touch x)`id`;|&<>*?[~{}]", "#comment",
                           "", "'", "line one\nline two", "\\n\\", "ü\u202e.txt",
                           "rs '\n\x01thee")):
    write("shell_quote", f"value-{i}", value.encode())

# ---- checkpoint_state: the state in manifest.json, as the native engine writes it ----

# examples/tiny's run as the coordinator resolves it (run/engine_spec.h, trainlock.engine-spec/1).
TINY_SPEC = {
    "schema": "trainlock.engine-spec/1", "engine": "native", "lock_sha256": sha("lock"),
    "config_sha256": sha("config"), "seed": 7, "eval_batches": 2,
    "model": {"architecture": "llama", "hidden_size": 64, "num_layers": 2, "num_heads": 4,
              "num_kv_heads": 2, "intermediate_size": 160, "vocab_size": 256,
              "tie_embeddings": False, "rope_theta": 10000.0, "rope_scaling": None,
              "norm_eps": 1e-05, "dropout": 0.1, "files": []},
    "training": {"seq_len": 32, "micro_batch": 4, "grad_accum": 2, "precision": "fp32",
                 "optimizer": {"name": "adamw", "lr": 0.001, "beta1": 0.9, "beta2": 0.95,
                               "eps": 1e-08, "weight_decay": 0.1},
                 "scheduler": {"name": "cosine", "warmup_steps": 2, "total_steps": 100,
                               "min_lr": 0.0001},
                 "grad_clip": 1.0, "activation_checkpointing": False, "parallelism": "ddp",
                 "shuffle": True, "deterministic": False},
    "data": {"kind": "synthetic", "seed": 7, "length": 64 * 32 + 1}}
LOADER = {"epoch": 0, "cursor": 16, "seed": 7, "shuffle": True, "train_windows": 56, "seq_len": 32}
write("checkpoint_state", "synthetic.json", json.dumps({
    "spec": TINY_SPEC, "spec_sha256": sha("spec"), "torch": "2.11.0",
    "data_loader": LOADER, "rng": {"cpu": "00ff", "cuda": []}, "loss_scaler": None,
    "optimizer": {"name": "adamw", "step": 4}}, indent=2))
SHARDS = [{"path": "/data/shard-%d.bin" % i, "name": "shard-%d.bin" % i, "sha256": sha("s%d" % i), "size": 4096}
          for i in range(2)]
write("checkpoint_state", "shards.json", json.dumps({
    "spec": dict(TINY_SPEC, eval_batches=1, data={"kind": "shards", "files": SHARDS, "bytes_per_token": 2}),
    "spec_sha256": sha("spec"), "data_loader": dict(LOADER, shuffle=False)}, indent=2))

# ---- metadata: a wheel's METADATA headers ----

write("metadata", "METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0.0\n"
      "Requires-Python: >=3.8\nRequires-Dist: util (>=1.1,<2)\n"
      "Requires-Dist: win; sys_platform == \"win32\"\n  continued\n\nThe description.\n")
