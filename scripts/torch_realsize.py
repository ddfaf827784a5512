#!/usr/bin/env python3
"""torch_realsize.py: the PyTorch side of `agentr1 bench --random SHAPE` (issue 27).

It runs the workload of `agentr1 bench` in PyTorch eager on the CPU, on a plain Qwen2 decoder
with random weights written out here the way Hugging Face transformers' eager Qwen2 computes
it: RMSNorm, RoPE (rotate-half), grouped-query attention with repeat_kv, SwiGLU, tied
embeddings, and a KV cache that grows by torch.cat at every step (DynamicCache).

  prefill  --prefill-batch prompts of --prefill tokens, each one forward pass; the lm_head
           only on the last position, as transformers' generate does (num_logits_to_keep=1).
  decode   --batch rows, a --prompt-token prompt each prefilled in one batched pass, untimed;
           then --gen greedy one-token steps of all rows together, timed, as agentr1's
           Decoder.Generate feeds each token (its last included) to the cache.

tokens/s is the median over --reps repetitions after one untimed warm-up. It prints the same
`name value unit` lines as agentr1 bench, so the two can be set side by side. It is not part
of the build or the tests. On Debian bookworm:
    apt-get install python3-torch          # PyTorch 1.13.1, CPU
    /usr/bin/python3 scripts/torch_realsize.py --shape qwen2.5-0.5b
"""

import argparse
import os
import resource
import statistics
import sys
import time

import torch

# The RMSNorm (eps 1e-6, as every Qwen2.5 checkpoint), RoPE tables and decoder layer of the
# bench-s script; only the layer's KV cache differs here.
import torch_bench
from torch_bench import RMSNorm, rope_tables, rotate_half

# The shapes of package bench's Shapes: (vocab, hidden, intermediate, layers, heads, kv heads,
# rope theta), from the Qwen2.5 Instruct config.json files.
SHAPES = {
    "qwen2.5-0.5b": (151936, 896, 4864, 24, 14, 2, 1e6),
    "qwen2.5-1.5b": (151936, 1536, 8960, 28, 12, 2, 1e6),
    "qwen2.5-3b": (151936, 2048, 11008, 36, 16, 2, 1e6),
}


class Layer(torch_bench.Layer):
    """torch_bench's layer (its projections and norms at the shape's sizes) with transformers'
    DynamicCache: the keys and values grow by torch.cat at every step."""

    def cached(self, k, v, cache, start):
        """cache: a list [k, v] of [B, Hkv, start, D] tensors (or None on the first pass),
        replaced by their concatenation with the new k, v [B, Hkv, T, D], which attention
        reads."""
        if cache[0] is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        cache[0], cache[1] = k, v
        return k, v


class Qwen2(torch.nn.Module):
    def __init__(self, shape, max_pos):
        super().__init__()
        vocab, hidden, inter, layers, heads, kv_heads, theta = shape
        self.embed_tokens = torch.nn.Embedding(vocab, hidden)
        self.layers = torch.nn.ModuleList(Layer(hidden, inter, heads, kv_heads) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.02)
        cos, sin = rope_tables(max_pos, hidden // heads, theta)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens, caches, start):
        """tokens: [B, T] -> next-token logits of the last position [B, V] (tied lm_head)."""
        T = tokens.shape[1]
        cos, sin = self.cos[start:start + T], self.sin[start:start + T]
        mask = None
        if T > 1:
            mask = torch.full((T, start + T), float("-inf"), dtype=self.cos.dtype).triu(start + 1)
        x = self.embed_tokens(tokens)
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cos, sin, mask, cache)
        return self.norm(x[:, -1]) @ self.embed_tokens.weight.t()


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="qwen2.5-0.5b", choices=sorted(SHAPES))
    ap.add_argument("--prefill-batch", type=int, default=1)
    ap.add_argument("--prefill", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    # bfloat16 runs every product in half precision (oneDNN's AVX512-BF16 kernels where the CPU
    # has them): not transformers' CPU default, which is float32, but the fastest PyTorch path.
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    shape = SHAPES[args.shape]
    layers = shape[3]
    t0 = time.perf_counter()
    model = Qwen2(shape, max(args.prefill, args.prompt + args.gen)).to(getattr(torch, args.dtype))
    load = time.perf_counter() - t0
    print(f"# built {args.shape} in {load:.1f} s", file=sys.stderr, flush=True)
    g = torch.Generator().manual_seed(27)
    prefill_prompts = torch.randint(0, shape[0], (args.prefill_batch, args.prefill), generator=g)
    decode_prompts = torch.randint(0, shape[0], (args.batch, args.prompt), generator=g)

    # Each phase returns (tokens per second, tokens per CPU-second): the process's CPU time,
    # all threads, as agentr1 bench's prefill_cpu and decode_cpu count it.
    def prefill():
        t, c = time.perf_counter(), time.process_time()
        for r in range(args.prefill_batch):
            model(prefill_prompts[r:r + 1], [[None, None] for _ in range(layers)], 0)
        n = args.prefill_batch * args.prefill
        return n / (time.perf_counter() - t), n / (time.process_time() - c)

    def decode():
        caches = [[None, None] for _ in range(layers)]
        nxt = model(decode_prompts, caches, 0).argmax(-1, keepdim=True)
        t, c = time.perf_counter(), time.process_time()
        for i in range(args.gen):
            nxt = model(nxt, caches, args.prompt + i).argmax(-1, keepdim=True)
        n = args.batch * args.gen
        return n / (time.perf_counter() - t), n / (time.process_time() - c)

    model(decode_prompts[:1], [[None, None] for _ in range(layers)], 0)  # warm-up
    pp, tg, ppc, tgc = [], [], [], []
    for i in range(args.reps):
        for rates, cpu, phase in ((pp, ppc, prefill), (tg, tgc, decode)):
            rate, cpu_rate = phase()
            rates.append(rate)
            cpu.append(cpu_rate)
        print(f"# rep {i + 1}: prefill {pp[-1]:.1f} tokens/s, decode {tg[-1]:.1f} tokens/s",
              file=sys.stderr, flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    print(f"torch {torch.__version__} -", flush=True)
    for name, value, unit in [
        ("threads", torch.get_num_threads(), "-"),
        ("dtype", args.dtype, "-"),
        ("params", sum(p.numel() for p in model.parameters()), "-"),
        ("load_time", f"{load:.3f}", "s"),
        ("prefill", f"{statistics.median(pp):.1f}", "tokens/s"),
        ("prefill_cpu", f"{statistics.median(ppc):.1f}", "tokens/cpu-s"),
        ("decode", f"{statistics.median(tg):.1f}", "tokens/s"),
        ("decode_cpu", f"{statistics.median(tgc):.1f}", "tokens/cpu-s"),
        ("reps", args.reps, "-"),
        ("peak_rss", f"{peak:.1f}", "MiB"),
    ]:
        print(name, value, unit, flush=True)


if __name__ == "__main__":
    main()
