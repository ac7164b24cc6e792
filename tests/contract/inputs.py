"""Small, reproducible inputs for the contract suite (tests/contract/registry.py).

``Inputs(device, dtype, batch)`` makes every tensor a registry entry needs. Values are drawn on the CPU
in float64 from one seeded generator, in the order the entry asks for them, then cast and moved, so that
the same entry called again draws the same numbers on any device (the ``meta`` device keeps only shapes).

Batched tensors (``batched``, ``batched_ints``, ``batched_mask``) always draw ``FULL`` rows; a run with
``row=r`` keeps only row ``r``. So the batch test compares the batch-``FULL`` run row for row with ``FULL``
runs of batch 1 on exactly the same numbers. Modules are built after ``torch.manual_seed(0)``.
"""

from __future__ import annotations

import torch

FULL = 2  # rows in a batched run


class Inputs:
    def __init__(self, device="cpu", dtype=torch.float64, row: int | None = None):
        self.device = torch.device(device)
        self.dtype = dtype
        self.row = row
        self.B = FULL if row is None else 1  # the batch size the entry sees
        self.gen = torch.Generator().manual_seed(0)

    # --- placement -------------------------------------------------------------------------------
    def _place(self, t: torch.Tensor, dtype=None) -> torch.Tensor:
        return t.to(dtype=dtype or (self.dtype if t.is_floating_point() else t.dtype)).to(self.device)

    def _rows(self, t: torch.Tensor) -> torch.Tensor:
        return t if self.row is None else t[self.row:self.row + 1]

    # --- unbatched tensors (weights, shared inputs) ----------------------------------------------
    def randn(self, *shape, scale=1.0) -> torch.Tensor:
        return self._place(scale * torch.randn(shape, generator=self.gen, dtype=torch.float64))

    def uniform(self, *shape, lo=0.0, hi=1.0) -> torch.Tensor:
        return self._place(lo + (hi - lo) * torch.rand(shape, generator=self.gen, dtype=torch.float64))

    def ints(self, high, *shape) -> torch.Tensor:
        return self._place(torch.randint(high, shape, generator=self.gen))

    # --- batched tensors: dim 0 is the batch ----------------------------------------------------
    def batched(self, *shape, scale=1.0, unit=False) -> torch.Tensor:
        t = scale * torch.randn((FULL,) + shape, generator=self.gen, dtype=torch.float64)
        if unit:  # unit L2 norm along the last dim (the delta rule's keys)
            t = t / t.norm(dim=-1, keepdim=True)
        return self._place(self._rows(t))

    def batched_uniform(self, *shape, lo=0.0, hi=1.0) -> torch.Tensor:
        t = lo + (hi - lo) * torch.rand((FULL,) + shape, generator=self.gen, dtype=torch.float64)
        return self._place(self._rows(t))

    def batched_ints(self, high, *shape, low=0) -> torch.Tensor:
        return self._place(self._rows(torch.randint(low, high, (FULL,) + shape, generator=self.gen)))

    def batched_mask(self, *shape, p=0.7) -> torch.Tensor:
        """A bool mask, True with probability p; the last position of every row is True."""
        t = torch.rand((FULL,) + shape, generator=self.gen) < p
        t[..., -1] = True
        return self._place(self._rows(t))

    def lengths(self, n) -> torch.Tensor:
        """Sequence lengths in [1, n] for a padding mask."""
        return self._place(self._rows(torch.randint(1, n + 1, (FULL,), generator=self.gen)))

    # --- modules ----------------------------------------------------------------------------------
    def module(self, factory):
        """factory() after torch.manual_seed(0), in eval mode, on this device and dtype."""
        torch.manual_seed(0)
        m = factory()
        m.eval()
        return m.to(device=self.device, dtype=self.dtype)
