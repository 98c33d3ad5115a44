"""Record real GPU profiler traces and an allocator snapshot on one CUDA GPU (Hopper or newer welcome).

Each recording goes to its own run folder under ``--out`` (default: ``samples/``), written the way
users write them (``<worker>.<ms>.pt.trace.json.gz``), and ``<folder>/RECORDED.json`` keeps what the
recording measured itself, the ground truth the tests compare the analyses with:

| folder | what runs | measured beside it |
|---|---|---|
| ``gpu_transformer_bf16/`` | a 4-layer decoder-only transformer, BF16 autocast, fused AdamW, pinned DataLoader, ``record_shapes``, ``with_stack``, ``profile_memory``, ``with_modules``, ``with_flops``; plus ``export_memory_timeline`` | wall µs per step (synchronized), peak allocated bytes |
| ``gpu_compile/`` | the same model under ``torch.compile`` (Inductor/Triton kernels) | wall µs per step |
| ``gpu_cudagraph/`` | the same model's whole training step captured in a CUDA graph and replayed | wall µs per step, graph kernels |
| ``gpu_fp8/`` | FP8 (e4m3) GEMMs through ``torch._scaled_mm`` with BF16 output, and a BF16 GEMM beside them | wall µs per step |
| ``gpu_ddp_nccl/`` | the BF16 step under DDP on one rank, NCCL (``record_param_comms``, NCCL kernels, process group fields) | wall µs per step, gradient bytes |
| ``gpu_inference/`` | greedy decoding of 16 tokens for 8 prompts under ``inference_mode``, BF16 weights | wall µs per step |
| ``gpu_snapshot/`` | allocator snapshots of 3 training steps: history started **after** the model and optimizer were built (the common case), and from the start | ``max_memory_allocated``, ``memory_allocated`` at dump, bytes of parameters |

Usage (on the GPU machine, from the repository root):
    python samples/record_gpu_traces.py [--out samples] [--only NAME ...]
``--device cpu`` runs the CPU-capable parts as a dry run of this script (nothing CUDA-only).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback

import torch
from torch import nn
from torch.nn import functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, TensorDataset

VOCAB = 4096
D_MODEL = 512
HEADS = 8
LAYERS = 4
SEQ = 512
BATCH = 8


class Block(nn.Module):
    """Pre-norm decoder block: causal self-attention (SDPA) and a GELU MLP."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyGPT(nn.Module):
    """Token + position embeddings, ``LAYERS`` blocks, a final norm and a tied LM head."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(SEQ, D_MODEL)
        self.blocks = nn.ModuleList(Block(D_MODEL, HEADS) for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D_MODEL)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.tok.weight.t()


def loader(batches: int) -> DataLoader:
    """A DataLoader over random token batches (inputs, next-token targets), pinned when CUDA is there."""
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, VOCAB, (batches * BATCH, SEQ + 1), generator=g)
    return DataLoader(
        TensorDataset(tokens[:, :-1], tokens[:, 1:]),
        batch_size=BATCH,
        pin_memory=torch.cuda.is_available(),
        num_workers=0,
    )


def activities(dev: str) -> list:
    return [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])


def sync(dev: str) -> None:
    if dev == "cuda":
        torch.cuda.synchronize()


def worker_name(dev: str) -> str:
    """``h100``, ``h200``, … from the GPU's name (``cpu`` for a dry run)."""
    if dev != "cuda":
        return "cpu"
    name = torch.cuda.get_device_name(0).lower()
    for tag in ("h200", "h100", "h20", "b200", "b100", "gb200", "a100", "l40", "mi300"):
        if tag in name:
            return tag
    return "gpu0"


def trace_writer(out_dir: str, worker: str, memory_timeline: bool = False):
    """An ``on_trace_ready`` that writes ``<worker>.<ms>.pt.trace.json.gz`` (tensorboard_trace_handler's
    naming) and, if asked, ``<same stem>.pt.trace.memory.raw.json.gz`` from ``export_memory_timeline``."""

    def ready(prof) -> None:
        os.makedirs(out_dir, exist_ok=True)
        stem = os.path.join(out_dir, f"{worker}.{int(time.time() * 1000)}")
        prof.export_chrome_trace(stem + ".pt.trace.json.gz")
        if memory_timeline:
            device = "cuda:0" if torch.cuda.is_available() else "cpu"
            prof.export_memory_timeline(stem + ".pt.trace.memory.raw.json.gz", device=device)

    return ready


def timed_steps(step_fn, batches, total: int, dev: str, prof=None) -> list[float]:
    """Run ``step_fn(x, y)`` on ``total`` batches; the synchronized wall µs of each step."""
    walls = []
    for i, (x, y) in enumerate(batches):
        if i >= total:
            break
        sync(dev)
        t0 = time.perf_counter()
        step_fn(x, y)
        sync(dev)
        walls.append((time.perf_counter() - t0) * 1e6)
        if prof is not None:
            prof.step()
    return walls


def train_step_fn(model, opt, dev: str):
    """One BF16-autocast training step: H2D copy, forward, loss, backward, optimizer; ``loss.item()`` syncs."""

    def step(x, y):
        x = x.to(dev, non_blocking=True)
        y = y.to(dev, non_blocking=True)
        with torch.autocast(dev, dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, VOCAB), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    return step


def build(dev: str):
    torch.manual_seed(0)
    model = TinyGPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev == "cuda")
    return model, opt


def profiled(dev: str, out_dir: str, wait: int, warmup: int, active: int, memory_timeline=False):
    return profile(
        activities=activities(dev),
        schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
        on_trace_ready=trace_writer(out_dir, worker_name(dev), memory_timeline),
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
        with_modules=True,
        with_flops=True,
    )


def profile_without_data(step_fn, dev: str, out_dir: str, wait: int = 1, warmup: int = 1, active: int = 3) -> dict:
    """Profile ``wait + warmup + active`` calls of ``step_fn(None, None)`` (a step that feeds itself) under
    the schedule; the record's step figures: the profiled steps' synchronized wall µs and their count."""
    total = wait + warmup + active
    with profiled(dev, out_dir, wait, warmup, active) as prof:
        walls = timed_steps(step_fn, [(None, None)] * total, total, dev, prof)
    return {"step_wall_us": walls[wait + warmup :], "profiled_steps": active}


def rec_transformer_bf16(dev: str, out_dir: str) -> dict:
    model, opt = build(dev)
    step = train_step_fn(model, opt, dev)
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    wait, warmup, active = 1, 1, 3
    with profiled(dev, out_dir, wait, warmup, active, memory_timeline=True) as prof:
        walls = timed_steps(step, loader(wait + warmup + active), wait + warmup + active, dev, prof)
    out = {"step_wall_us": walls[wait + warmup :], "profiled_steps": active}
    if dev == "cuda":
        out["max_memory_allocated_bytes"] = torch.cuda.max_memory_allocated()
    return out


def rec_compile(dev: str, out_dir: str) -> dict:
    model, opt = build(dev)
    cmodel = torch.compile(model)
    step = train_step_fn(cmodel, opt, dev)
    wait, warmup, active = 2, 1, 3  # the first steps compile (tens of seconds); not profiled
    with profiled(dev, out_dir, wait, warmup, active) as prof:
        walls = timed_steps(step, loader(wait + warmup + active), wait + warmup + active, dev, prof)
    return {"step_wall_us": walls[wait + warmup :], "profiled_steps": active, "compile_steps_wall_us": walls[:wait]}


def rec_cudagraph(dev: str, out_dir: str) -> dict:
    """The training step (forward, backward, SGD) captured once, then replayed with new data copied in."""
    torch.manual_seed(0)
    model = TinyGPT().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = list(loader(8))
    static_x = data[0][0].to(dev)
    static_y = data[0][1].to(dev)

    def body():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev, dtype=torch.bfloat16, cache_enabled=False):
            loss = F.cross_entropy(model(static_x).float().view(-1, VOCAB), static_y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = body()

    def step(x, y):
        static_x.copy_(x, non_blocking=True)
        static_y.copy_(y, non_blocking=True)
        with record_function("graph_replay"):
            graph.replay()
        return static_loss.item()

    wait, warmup, active = 1, 1, 3
    with profiled(dev, out_dir, wait, warmup, active) as prof:
        walls = timed_steps(step, data[1:], wait + warmup + active, dev, prof)
    return {"step_wall_us": walls[wait + warmup :], "profiled_steps": active}


def rec_fp8(dev: str, out_dir: str) -> dict:
    """Per step: 4 FP8 e4m3 GEMMs (4096³, BF16 out, tensor-wise scales), a BF16 GEMM of the same size,
    and a GELU; each under a ``record_function`` naming it."""
    m = n = k = 4096
    g = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(m, k, device=dev, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device=dev, generator=g).to(torch.float8_e4m3fn).t()  # column-major, as required
    one = torch.tensor(1.0, device=dev)
    a16 = torch.randn(m, k, device=dev, dtype=torch.bfloat16, generator=g)
    b16 = torch.randn(k, n, device=dev, dtype=torch.bfloat16, generator=g)

    def step(_x, _y):
        with record_function("fp8_gemms"):
            out = None
            for _ in range(4):
                out = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        with record_function("bf16_gemm"):
            out16 = a16 @ b16
        with record_function("gelu"):
            F.gelu(out + out16)

    return {
        **profile_without_data(step, dev, out_dir),
        "gemm_shape_mnk": [m, n, k],
        "fp8_gemms_per_step": 4,
        "bf16_gemms_per_step": 1,
    }


def rec_ddp_nccl(dev: str, out_dir: str) -> dict:
    """The BF16 training step under DistributedDataParallel on one rank (NCCL on CUDA, gloo on a dry run):
    real ``record_param_comms``/``nccl:all_reduce`` events and communication kernels, with the process
    group's name, description and ranks as PyTorch writes them."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl" if dev == "cuda" else "gloo", rank=0, world_size=1)
    try:
        model, _ = build(dev)
        ddp = DistributedDataParallel(model, bucket_cap_mb=8)
        opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4, fused=dev == "cuda")
        step = train_step_fn(ddp, opt, dev)
        wait, warmup, active = 1, 1, 3
        with profiled(dev, os.path.join(out_dir), wait, warmup, active) as prof:
            walls = timed_steps(step, loader(wait + warmup + active), wait + warmup + active, dev, prof)
        grads = sum(p.numel() * p.element_size() for p in model.parameters())
        return {
            "step_wall_us": walls[wait + warmup :],
            "profiled_steps": active,
            "world_size": 1,
            "backend": dist.get_backend(),
            "bucket_cap_mb": 8,
            "gradient_bytes": grads,
        }
    finally:
        dist.destroy_process_group()


def rec_inference(dev: str, out_dir: str) -> dict:
    """Serving-style decoding: under ``inference_mode``, BF16 weights, each profiled step generates 16
    tokens greedily for 8 prompts of 128 tokens (the whole prefix recomputed per token: no KV cache)."""
    torch.manual_seed(0)
    model = TinyGPT().to(dev).to(torch.bfloat16).eval()
    prompts = torch.randint(0, VOCAB, (BATCH, 128), device=dev)
    new_tokens = 16

    def step(_x, _y):
        with torch.inference_mode():
            idx = prompts
            for _ in range(new_tokens):
                with record_function("decode_token"):
                    nxt = model(idx)[:, -1].argmax(-1, keepdim=True)
                idx = torch.cat([idx, nxt], dim=1)
        return idx

    return {
        **profile_without_data(step, dev, out_dir),
        "prompts": BATCH,
        "prompt_tokens": 128,
        "new_tokens_per_step": new_tokens,
    }


def rec_snapshot(dev: str, out_dir: str) -> dict:
    """Two snapshots of 3 training steps: history begun after the model and optimizer exist (its
    parameters then carry no allocation history), and history begun before anything was allocated."""
    os.makedirs(out_dir, exist_ok=True)
    out: dict = {}
    for label, early in (("after_build", False), ("from_start", True)):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        if early:
            torch.cuda.memory._record_memory_history(max_entries=200_000, stacks="python")
        model, opt = build(dev)
        params = sum(p.numel() * p.element_size() for p in model.parameters())
        if not early:
            torch.cuda.memory._record_memory_history(max_entries=200_000, stacks="python")
        step = train_step_fn(model, opt, dev)
        timed_steps(step, loader(3), 3, dev)
        path = os.path.join(out_dir, f"{worker_name(dev)}_{label}.pickle")
        torch.cuda.memory._dump_snapshot(path)
        torch.cuda.memory._record_memory_history(enabled=None)
        out[label] = {
            "file": os.path.basename(path),
            "parameter_bytes": params,
            "allocated_before_build_bytes": base,
            "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(),
            "memory_allocated_at_dump_bytes": torch.cuda.memory_allocated(),
            "memory_reserved_at_dump_bytes": torch.cuda.memory_reserved(),
            "file_bytes": os.path.getsize(path),
        }
        del model, opt, step
    return out


RECORDINGS = {
    "gpu_transformer_bf16": (rec_transformer_bf16, False),
    "gpu_compile": (rec_compile, False),
    "gpu_cudagraph": (rec_cudagraph, True),
    "gpu_fp8": (rec_fp8, True),
    "gpu_snapshot": (rec_snapshot, True),
    "gpu_ddp_nccl": (rec_ddp_nccl, False),
    "gpu_inference": (rec_inference, False),
}


def environment(dev: str) -> dict:
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": dev}
    if dev == "cuda":
        p = torch.cuda.get_device_properties(0)
        env.update(
            gpu=p.name,
            capability=list(torch.cuda.get_device_capability(0)),
            sm_count=p.multi_processor_count,
            total_memory_bytes=p.total_memory,
        )
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--only", nargs="*", default=None, choices=sorted(RECORDINGS))
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    failed = 0
    for name, (fn, cuda_only) in RECORDINGS.items():
        if args.only and name not in args.only:
            continue
        if cuda_only and args.device != "cuda":
            print(f"{name}: skipped (needs CUDA)")
            continue
        out_dir = os.path.join(args.out, name)
        t0 = time.perf_counter()
        try:
            measured = fn(args.device, out_dir)
        except Exception:
            failed += 1
            print(f"{name}: FAILED\n{traceback.format_exc()}")
            continue
        record = {
            "recording": name,
            "script": "samples/record_gpu_traces.py",
            **environment(args.device),
            "measured": measured,
        }
        with open(os.path.join(out_dir, "RECORDED.json"), "w") as f:
            json.dump(record, f, indent=1)
        print(f"{name}: {time.perf_counter() - t0:.1f} s")
        for fname in sorted(os.listdir(out_dir)):
            print(f"  {fname}  {os.path.getsize(os.path.join(out_dir, fname))} bytes")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
