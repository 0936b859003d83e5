"""A plain-PyTorch Llama decoder (the `ddp` engine's model), parameter names as Hugging
Face's LlamaForCausalLM (model.embed_tokens, model.layers.N.self_attn.q_proj, ...,
model.norm, lm_head) so pinned weights load by name.

As the native engine's llama.cc: RMSNorm in fp32, rotary embeddings (rope_theta, linear or
llama3 scaling) with rotate_half, grouped-query attention, SwiGLU MLP, dropout on the
embeddings and each residual branch. Activation checkpointing recomputes each decoder layer
(torch.utils.checkpoint) and counts the recomputed layers, so the measured shape reports what
happened rather than what the config asked for.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def inverse_frequencies(m):
    """RoPE inverse frequencies as transformers computes them (default, linear, llama3)."""
    dim = m["hidden_size"] // m["num_heads"]
    scaling = m["rope_scaling"]
    out = []
    for i in range(0, dim, 2):
        f = 1.0 / (m["rope_theta"] ** (i / dim))
        if scaling and scaling["type"] == "linear":
            f /= scaling["factor"]
        elif scaling and scaling["type"] == "llama3":
            original = scaling["original_max_position_embeddings"]
            low_wavelen = original / scaling["low_freq_factor"]
            high_wavelen = original / scaling["high_freq_factor"]
            wavelen = 2 * math.pi / f
            if wavelen > low_wavelen:
                f = f / scaling["factor"]
            elif wavelen >= high_wavelen:
                smooth = (original / wavelen - scaling["low_freq_factor"]) / (scaling["high_freq_factor"] - scaling["low_freq_factor"])
                f = (1 - smooth) * f / scaling["factor"] + smooth * f
        out.append(f)
    return out


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


def rotate_half(x):
    a, b = x.chunk(2, -1)
    return torch.cat((-b, a), -1)


def causal_attention(q, k, v):
    group = q.size(1) // k.size(1)
    if group > 1:
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    if TORCH2:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    seq = q.size(-2)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    mask = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores.float(), -1).to(q.dtype), v)


class Attention(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.heads, self.kv_heads = m["num_heads"], m["num_kv_heads"]
        self.head_dim = m["hidden_size"] // self.heads
        h = m["hidden_size"]
        self.q_proj = nn.Linear(h, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, h, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = causal_attention(q, k, v)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class Mlp(nn.Module):
    def __init__(self, m):
        super().__init__()
        h, i = m["hidden_size"], m["intermediate_size"]
        self.gate_proj = nn.Linear(h, i, bias=False)
        self.up_proj = nn.Linear(h, i, bias=False)
        self.down_proj = nn.Linear(i, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.dropout = m["dropout"]
        self.self_attn = Attention(m)
        self.mlp = Mlp(m)
        self.input_layernorm = RMSNorm(m["hidden_size"], m["norm_eps"])
        self.post_attention_layernorm = RMSNorm(m["hidden_size"], m["norm_eps"])

    def forward(self, x, cos, sin):
        h = x + F.dropout(self.self_attn(self.input_layernorm(x), cos, sin), self.dropout, self.training)
        return h + F.dropout(self.mlp(self.post_attention_layernorm(h)), self.dropout, self.training)


class LlamaBody(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.embed_tokens = nn.Embedding(m["vocab_size"], m["hidden_size"])
        self.layers = nn.ModuleList(DecoderLayer(m) for _ in range(m["num_layers"]))
        self.norm = RMSNorm(m["hidden_size"], m["norm_eps"])


class Llama(nn.Module):
    def __init__(self, m, activation_checkpointing=False):
        super().__init__()
        self.config = m
        self.model = LlamaBody(m)
        self.lm_head = None if m["tie_embeddings"] else nn.Linear(m["hidden_size"], m["vocab_size"], bias=False)
        self.register_buffer("inv_freq", torch.tensor(inverse_frequencies(m), dtype=torch.float64), persistent=False)
        self.activation_checkpointing = activation_checkpointing
        self.recomputed_layers = 0  # layers run under torch.utils.checkpoint
        self.logits_dtype = None  # the dtype of the last forward's logits

    def init_weights(self):
        """normal(0, 0.02) matrices, ones for norms, in parameter order: as the native engine."""
        with torch.no_grad():
            for _, p in self.named_parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, 0.02)
                else:
                    p.fill_(1.0)

    def rotary(self, seq, device, dtype):
        positions = torch.arange(seq, dtype=torch.float32, device=device)
        freqs = torch.outer(positions, self.inv_freq.to(device=device, dtype=torch.float32))
        emb = torch.cat((freqs, freqs), -1)
        return emb.cos().to(dtype)[None, None], emb.sin().to(dtype)[None, None]

    def forward(self, tokens):
        h = F.dropout(self.model.embed_tokens(tokens), self.config["dropout"], self.training)
        cos, sin = self.rotary(tokens.size(1), tokens.device, h.dtype)
        for layer in self.model.layers:
            if self.activation_checkpointing and self.training and torch.is_grad_enabled():
                from torch.utils.checkpoint import checkpoint

                self.recomputed_layers += 1
                h = checkpoint(layer, h, cos, sin, use_reentrant=False)
            else:
                h = layer(h, cos, sin)
        h = self.model.norm(h)
        if self.lm_head is not None:
            logits = self.lm_head(h)
        else:
            logits = torch.matmul(h, self.model.embed_tokens.weight.t().to(h.dtype))
        self.logits_dtype = logits.dtype
        return logits


def causal_lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1))


def matmul_parameters(m):
    """Parameters that do a matmul per token: all but an untied embedding lookup."""
    h, i, v, layers = m["hidden_size"], m["intermediate_size"], m["vocab_size"], m["num_layers"]
    kv = m["num_kv_heads"] * (h // m["num_heads"])
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * i + 2 * h
    return layers * per_layer + h + v * h
