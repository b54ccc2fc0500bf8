"""
TPU chip presets (DESIGN.md's table; sources: Google Cloud TPU docs, "How to Scale Your
Model" Part 2).

Numbers are per chip. Where the table is silent this module decides, and says so:
- f32 and f16 matmuls run at the bf16 peak (XLA:TPU's default precision is one bf16 pass);
  f64 has no hardware path and is charged 1/8 of the peak; i32/i64 matmuls run at the bf16
  peak; i8/ui8 (and i4/ui4, i2/ui2, which the MXU takes as int8) at `int8_factor` times
  it (2 on v5e, v5p, v6e; 1 on v4, which has no faster int8 path); f8 at the bf16 peak (no
  fp8 MXU before v7); a complex matmul is four real ones.
- Elementwise and reduction FLOPs run on the VPU, about 1/16 of the MXU peak (v5p: 1.4e13
  VPU vs 4.59e14 MXU, scaling book Part 2); they are almost always HBM-bound anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

GiB = 1024**3
MiB = 1024**2


@dataclass(frozen=True)
class Chip:
    name: str
    flops_bf16: float
    """Peak MXU FLOP/s (bf16)."""
    hbm_bytes: int
    hbm_bw: float
    """HBM bytes/s."""
    ici_link_bw: float
    """ICI bytes/s per link per direction."""
    torus_dims: int
    """2 (v5e, v6e) or 3 (v4, v5p)."""
    vmem_bytes: int
    dcn_bw: float | None
    """DCN bytes/s per chip (None where the table gives none)."""
    hop_latency: float = 1e-6
    """Per-hop ICI latency, seconds."""
    smem_bytes: int = MiB
    """SMEM per core (1 MiB on every generation listed, tpu_info)."""
    vmem_bw_factor: float = 22.0
    """VMEM bandwidth to the compute units, as a multiple of HBM's (scaling book Part 2)."""
    full_axis: int = 16
    """Torus axis length that has wraparound links (v5e/v6e: 16; v4/v5p: multiples of 4)."""
    wrap_multiple: bool = False
    """True if any axis length that is a multiple of `full_axis` has wraparound (v4, v5p)."""
    int8_factor: float = 2.0
    """MXU int8 peak as a multiple of the bf16 peak (v4: 1)."""

    @property
    def vpu_flops(self) -> float:
        return self.flops_bf16 / 16

    def has_wraparound(self, axis_size: int) -> bool:
        """Whether a torus axis of this length (in one slice) has wraparound links."""
        if axis_size <= 2:
            return False
        if self.wrap_multiple:
            return axis_size % self.full_axis == 0
        return axis_size == self.full_axis

    def axis_bandwidth_for(self, wraparound: bool) -> float:
        """Bytes/s a ring collective gets over one torus axis: both directions with wraparound."""
        return self.ici_link_bw * (2 if wraparound else 1)


CHIPS: dict[str, Chip] = {
    "v4": Chip(
        "v4",
        2.75e14,
        32 * GiB,
        1.2e12,
        4.5e10,
        3,
        16 * MiB,
        None,
        full_axis=4,
        wrap_multiple=True,
        int8_factor=1.0,
    ),
    "v5e": Chip("v5e", 1.97e14, 16 * 10**9, 8.1e11, 4.5e10, 2, 128 * MiB, 3.125e9),
    "v5p": Chip(
        "v5p",
        4.59e14,
        95 * GiB,
        2.765e12,
        9e10,
        3,
        64 * MiB,
        6.25e9,
        full_axis=4,
        wrap_multiple=True,
    ),
    "v6e": Chip("v6e", 9.18e14, 32 * 10**9, 1.64e12, 9e10, 2, 128 * MiB, 1.25e10),
}


class UnknownChipError(ValueError):
    pass


def get_chip(name: str) -> Chip:
    try:
        return CHIPS[name]
    except KeyError:
        raise UnknownChipError(f"unknown chip '{name}' (known: {', '.join(CHIPS)})") from None
