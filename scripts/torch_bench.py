#!/usr/bin/env python3
"""torch_bench.py: the PyTorch side of issue 3's comparison, in the same minutes as ours.

It runs the two model/ benchmarks of issue 3 in PyTorch eager on the CPU, written out here as a
plain Qwen2 decoder (RMSNorm, RoPE, grouped-query attention, SwiGLU, tied embeddings), the way
Hugging Face transformers' eager Qwen2 computes it:

  train     BenchmarkTrainStep/config=bench-s: forward, next-token cross entropy (mean of
            -log p over the B*(T-1) predicted tokens), backward, AdamW (lr 1e-3, betas
            0.9/0.999, eps 1e-8, weight decay 0.01) on a batch of 8 x 256 tokens.
  generate  BenchmarkGenerate/config=bench-s/batch=16: greedy decoding with a KV cache,
            16 rows, a 32-token prompt each prefilled row by row, then 224 new tokens per row
            (the first from the prefill, 223 batched one-token steps). tokens/s = 16*224/time.

PyTorch gets every advantage we could give it: preallocated KV caches written in place (not
concatenated each step), gradients set to None instead of zeroed, torch.no_grad for decoding,
as many threads as the machine has. It prints one line per benchmark in `go test -bench`
format, so benchstat and scripts/abbench.sh's readers can take both.

It is not part of the build or the tests (agentr1 needs no Python). On Debian bookworm:
    apt-get install python3-torch          # PyTorch 1.13.1, CPU, OpenBLAS
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/torch_bench.py -n 5 train generate
(OpenBLAS 0.3.21 does not know Sapphire/Emerald Rapids and falls back to its Prescott kernels
unless told the core type: BENCHMARKS.md, eighth pass.)
"""

import argparse
import math
import os
import time

import torch
import torch.nn.functional as F

# bench-s, model/bench_test.go's benchS.
VOCAB, HIDDEN, INTER, LAYERS, HEADS, KV_HEADS = 4096, 256, 688, 4, 8, 4
HEAD_DIM = HIDDEN // HEADS
EPS, THETA = 1e-6, 10000.0


class RMSNorm(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def rope_tables(max_pos, head_dim=HEAD_DIM, theta=THETA):
    """cos, sin: [max_pos, head_dim], the rotate-half layout of Hugging Face's Qwen2."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    ang = torch.outer(torch.arange(max_pos).float(), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


class Layer(torch.nn.Module):
    """One decoder layer, of bench-s's sizes unless given others (torch_realsize.py's shapes)."""

    def __init__(self, hidden=HIDDEN, inter=INTER, heads=HEADS, kv_heads=KV_HEADS):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        D = self.head_dim
        self.input_layernorm = RMSNorm(hidden)
        self.q_proj = torch.nn.Linear(hidden, heads * D, bias=True)
        self.k_proj = torch.nn.Linear(hidden, kv_heads * D, bias=True)
        self.v_proj = torch.nn.Linear(hidden, kv_heads * D, bias=True)
        self.o_proj = torch.nn.Linear(heads * D, hidden, bias=False)
        self.post_attention_layernorm = RMSNorm(hidden)
        self.gate_proj = torch.nn.Linear(hidden, inter, bias=False)
        self.up_proj = torch.nn.Linear(hidden, inter, bias=False)
        self.down_proj = torch.nn.Linear(inter, hidden, bias=False)

    def forward(self, x, cos, sin, mask, cache=None, start=0):
        """x: [B, T, C]; cos, sin: [T, D]; mask: [T, S] additive (or None). With
        cache = (k, v), each [B, Hkv, maxT, D], the new keys and values are written at
        positions start..start+T and attention reads 0..start+T."""
        B, T, C = x.shape
        H, Hkv, D = self.heads, self.kv_heads, self.head_dim
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(h).view(B, T, Hkv, D).transpose(1, 2)
        v = self.v_proj(h).view(B, T, Hkv, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = self.cached(k, v, cache, start)
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(D)  # [B, H, T, S]
        if mask is not None:
            s = s + mask
        a = torch.softmax(s, dim=-1) @ v  # [B, H, T, D]
        x = x + self.o_proj(a.transpose(1, 2).reshape(B, T, H * D))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))

    def cached(self, k, v, cache, start):
        """Returns the keys and values attention reads given the new ones k, v [B, Hkv, T, D]:
        k, v themselves without a cache; else, cache = (k, v) being preallocated
        [B, Hkv, maxT, D], k and v written in place at positions start..start+T, and the
        cache's positions 0..start+T."""
        if cache is None:
            return k, v
        T = k.shape[2]
        cache[0][:, :, start:start + T] = k
        cache[1][:, :, start:start + T] = v
        return cache[0][:, :, :start + T], cache[1][:, :, :start + T]


class Qwen2(torch.nn.Module):
    def __init__(self, max_pos=2048):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(VOCAB, HIDDEN)
        self.layers = torch.nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm = RMSNorm(HIDDEN)
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.02)
        cos, sin = rope_tables(max_pos)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens, caches=None, start=0):
        """tokens: [B, T] -> logits [B, T, VOCAB] (tied lm_head)."""
        T = tokens.shape[1]
        cos, sin = self.cos[start:start + T], self.sin[start:start + T]
        mask = None
        if T > 1:
            mask = torch.full((T, start + T), float("-inf")).triu(start + 1)
        x = self.embed_tokens(tokens)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, mask, None if caches is None else caches[i], start)
        return self.norm(x) @ self.embed_tokens.weight.t()


def bench_train(model, rounds):
    B, T = 8, 256
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB, (B, T), generator=g)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        logp = torch.log_softmax(model(tokens)[:, :-1], dim=-1)
        loss = -logp.gather(-1, tokens[:, 1:, None]).mean()
        loss.backward()
        opt.step()

    # The untimed first step sizes the optimiser moments, as the Go benchmark's does.
    run_timed("BenchmarkTrainStep/config=bench-s/torch", step, rounds, B * T)


@torch.no_grad()
def bench_generate(model, rounds):
    rows, prompt, gen = 16, 32, 224
    g = torch.Generator().manual_seed(2)
    prompts = torch.randint(0, VOCAB, (rows, prompt), generator=g)
    caches = [(torch.zeros(rows, KV_HEADS, prompt + gen, HEAD_DIM),
               torch.zeros(rows, KV_HEADS, prompt + gen, HEAD_DIM)) for _ in range(LAYERS)]

    def decode():
        nxt = torch.empty(rows, 1, dtype=torch.long)
        for r in range(rows):  # the Go benchmark prefills row by row
            row = [(k[r:r + 1], v[r:r + 1]) for k, v in caches]
            nxt[r, 0] = model(prompts[r:r + 1], row, 0)[0, -1].argmax()
        for i in range(gen - 1):
            nxt = model(nxt, caches, prompt + i)[:, -1].argmax(-1, keepdim=True)

    run_timed("BenchmarkGenerate/config=bench-s/batch=16/torch", decode, rounds, rows * gen)


def run_timed(name, fn, rounds, tokens):
    """Runs fn once untimed, then rounds times, and prints a `go test -bench` line: the mean
    time per call as ns/op and tokens (per call) per second."""
    fn()
    t0 = time.perf_counter()
    for _ in range(rounds):
        fn()
    dt = (time.perf_counter() - t0) / rounds
    print(f"{name} \t{rounds}\t{dt * 1e9:.0f} ns/op\t{tokens / dt:.0f} tokens/s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=5, help="timed repetitions per benchmark")
    ap.add_argument("-threads", type=int, default=os.cpu_count(), help="torch threads")
    ap.add_argument("benchmarks", nargs="*", default=["train", "generate"],
                    choices=["train", "generate"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = Qwen2()
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}", flush=True)
    for name in args.benchmarks:
        {"train": bench_train, "generate": bench_generate}[name](model, args.n)


if __name__ == "__main__":
    main()
