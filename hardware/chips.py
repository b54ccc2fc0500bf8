"""
TPU chip presets (DESIGN.md's table; sources: Google Cloud TPU docs, "How to Scale Your
Model" Part 2).

Checked against Google Cloud's TPU pages (issue 14 item 8; https://cloud.google.com/tpu/docs/v5e,
https://cloud.google.com/tpu/docs/v5p, https://cloud.google.com/tpu/docs/v6e):
- peak bf16 FLOP/s, HBM capacity: as published (v5e 197 T, 16 GB; v5p 459 T, 95 GiB;
  v6e 918 T, 32 GB);
- HBM bandwidth: v5p 2765 GB/s and v6e 1640 GB/s as published; v5e 810 GB/s here against
  819 GB/s published (the scaling book's 8.1e11; 1% apart, kept);
- ICI: Google Cloud gives the bidirectional bandwidth per chip (v5e 400 GB/s over 4 ports,
  v5p 1200 GB/s over 6, v6e 800 GB/s over 4): 50 GB/s per link per direction on v5e and
  100 GB/s on v5p and v6e. The table keeps the scaling book's 4.5e10 and 9e10 B/s per link
  per direction (Part 2), what its worked examples (and bench/fidelity.py's rows taken
  from them) use: 90% of Google Cloud's link peak, i.e. the rate a link sustains rather
  than its signalling rate (with 50 / 100 every bandwidth-bound collective here would be
  10% faster). The book is not consistent on it (fid7): its Part 2 table as published now
  (jax-ml/scaling-book tpus.md at 04d8de5) gives one-way 5e10 on v5e and 1e11 on v5p and
  v6e (Google Cloud's figures; 4.5e10 is v4p's there), while its Part 3 worked answers in
  the same version still use 4.5e10 / 9e10 for v5e. The two v5e profiles the book publishes
  (bench/RESULTS.md, fidelity) sustain 3.6e10-3.7e10 B/s on a 4-long line, below both.
  Kept at 4.5e10 / 9e10: no published figure gives a sustained link rate, and changing the
  constant is the lead's decision (every collective everywhere moves with it);
- DCN per chip: v5e 6.4 Tb/s per 256-chip pod = 3.125e9 B/s; v5p 50 Gb/s = 6.25e9 B/s;
  v6e 25.6 Tb/s per pod = 1.25e10 B/s: as published. v4 gives none;
- pods (ICI domains, `pod_chips`): v5e and v6e 256 chips (16x16), v5p 8960, v4 4096.

Numbers are per chip. Where the table is silent this module decides, and says so:
- f32 and f16 matmuls run at the bf16 peak (XLA:TPU's default precision is one bf16 pass);
  f64 has no hardware path and is charged 1/8 of the peak; i8/ui8 (and i4/ui4, i2/ui2,
  which the MXU takes as int8) at `int8_factor` times it (2 on v5e, v5p, v6e; 1 on v4, which has no faster int8 path); f8 at the bf16 peak (no
  fp8 MXU before v7); a complex matmul is four real ones; a wider integer matmul is
  (bits / 8)^2 int8 passes (i16 1/2, i32 1/8, i64 1/32 of the bf16 peak with int8 at 2x):
  integer matmuls do not run at the bf16 peak (the scaling book's int32 matmul of its
  collective-matmul example, 4.3 GOP in 224 us on 8 devices the page does not name, a v5e-8
  assumed, ran at 1/10 of it;
  bench/fidelity.py). Why wider integers are passes of 8 bits: the MXU takes no 32-bit
  integer operands. JAX's own table of what each generation's MXU multiplies
  (jax/_src/pallas/mosaic/tpu_info.py, `TpuInfo.is_matmul_supported`): v5e/v5p/v6e pairs
  of f32/bf16/fp8, pairs of u8/s8 and pairs of u4/s4 (v5e: int8 3.94e14, int4 7.88e14
  op/s), v4 f32/bf16 with an s8 right operand. So XLA:TPU must split an s32 dot into 8-bit
  (or 4-bit) pieces and combine the partial products on the VPU. How many passes it runs
  and at which rate is not published (XLA:TPU is closed source): because an s32 dot wraps
  mod 2^32, only the 10 byte pairs (i, j) with i + j < 4 matter, which at the int8 rate is
  a floor of 109 us for the book's example; all 16 pairs (what is charged here) give 174
  us; the measured 224 us leaves 50-115 us to the splitting, the shifts and adds and the
  extra VMEM traffic, for which no source gives a rate. The charge is kept at 16 passes
  rather than fitted to that one measurement (bench/RESULTS.md, the fidelity section).
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
    pod_chips: int = 256
    """Chips of one ICI domain (pod): v5e/v6e 256 (16x16), v4 4096, v5p 8960; larger
    meshes cross the data-center network (`topology.dcn_axes`)."""
    dcn_latency: float = 1e-5
    """Seconds per DCN message (an assumption: no published figure; 10x an ICI hop)."""

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
        pod_chips=4096,
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
        pod_chips=8960,
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
