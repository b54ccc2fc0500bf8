"""
The project's dialects, one module each: `hlo` (global tensor ops, level G), `spmd`
(meshes and shardings), `collective` (per-device communication, level S), `tpu` (per-device
kernels of DMAs, semaphores and vector blocks, level T).
"""

from xdsl.context import Context


def register_dialects(ctx: Context) -> None:
    """Register shardc's dialects (lazily) on `ctx`."""
    from shardc.dialects.collective import Collective
    from shardc.dialects.hlo import Hlo
    from shardc.dialects.spmd import Spmd
    from shardc.dialects.tpu import Tpu

    for dialect in (Hlo, Spmd, Collective, Tpu):
        if dialect.name not in ctx.registered_dialect_names:
            ctx.register_dialect(dialect.name, lambda d=dialect: d)


def make_context() -> Context:
    """A context with shardc's dialects and the xDSL dialects its programs use."""
    from xdsl.dialects import get_all_dialects

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    register_dialects(ctx)
    return ctx
