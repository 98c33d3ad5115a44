"""Record a real CPU-only PyTorch profiler trace of a small CNN training loop.

Writes ``<out_dir>/worker0.<timestamp>.pt.trace.json.gz`` via
``torch.profiler.tensorboard_trace_handler``. The trace has ProfilerStep markers, DataLoader
``__next__`` spans, aten ops with input shapes, ``[memory]`` events (profile_memory) and
``python_function`` stacks (with_stack).

Usage (from the repository root):
    python samples/record_cpu_trace.py [--out samples/torch_cpu_cnn] [--steps 3]
"""

from __future__ import annotations

import argparse
import os

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, TensorDataset


def make_model() -> nn.Module:
    """A tiny CNN for 3x32x32 inputs and 10 classes."""
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )


def make_loader(batches: int, batch_size: int = 16) -> DataLoader:
    """A DataLoader (single process) over random images and labels."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batches * batch_size, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (batches * batch_size,), generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, num_workers=0)


def record(out_dir: str, steps: int = 3, warmup: int = 1) -> None:
    """Train for wait(1) + warmup + steps iterations under the profiler; one trace file results."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    total = 1 + warmup + steps
    loader = make_loader(total)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=warmup, active=steps, repeat=1),
        on_trace_ready=tensorboard_trace_handler(out_dir, worker_name="worker0", use_gzip=True),
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
    ) as prof:
        for i, (x, y) in enumerate(loader):
            if i >= total:
                break
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            prof.step()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "torch_cpu_cnn"))
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    record(args.out, steps=args.steps)
    for name in sorted(os.listdir(args.out)):
        p = os.path.join(args.out, name)
        print(f"{p}  {os.path.getsize(p)} bytes")


if __name__ == "__main__":
    main()
