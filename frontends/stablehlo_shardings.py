"""
StableHLO's shardings as shardc's: the module's mesh and every `#sdy.sharding` or
`mhlo.sharding` string as an `#spmd.sharding` on that mesh.

JAX writes a module's shardings in one of two forms (see `stablehlo.py`): Shardy names
mesh axes (`sdy.mesh`, `#sdy.sharding<@mesh, [{"x"}, {}]>`), GSPMD writes tile
assignments over device ids (`{devices=[2,1]<=[2]}`), from which one mesh is inferred
for the whole module (`hlo_sharding.MeshBuilder`). `ShardingConverter.detect` decides the
form and the mesh once; the converters of arguments, results, constraints and manual
computations then ask it for each sharding.
"""

from __future__ import annotations

from shardc.dialects import spmd
from shardc.frontends import hlo_sharding as hs
from shardc.frontends.common import ImportStats
from shardc.frontends.stablehlo_dialect import SdyMeshAttr, SdyShardingAttr
from shardc.frontends.stablehlo_source import SourceErrors, all_attr_dicts, ints
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import VerifyException

SDY_MESH_ATTRS = ("sym_name", "axis_names", "axis_sizes", "device_ids", "stablehlo.mesh")

SOURCE_FORMATS = {
    "sdy": "stablehlo (shardy)",
    "gspmd": "stablehlo (gspmd mhlo.sharding)",
    "none": "stablehlo",
}
"""What `--stats` calls each sharding form."""


class ShardingConverter:
    """The module's mesh, and its shardings converted to `#spmd.sharding`s on it."""

    def __init__(self, errors: SourceErrors, stats: ImportStats, devices: int):
        self.errors = errors
        self.stats = stats
        self.devices = devices
        """mhlo.num_partitions x mhlo.num_replicas (or what GSPMD tile assignments say)."""
        self.mesh_name: str | None = None
        self.mesh: spmd.MeshAttr | None = None
        self.mode = "none"  # "sdy", "gspmd" or "none"
        self.mesh_builder: hs.MeshBuilder | None = None
        self.mesh_op: Operation | None = None
        """The source op the mesh comes from (`sdy.mesh`, or the first `mhlo.sharding`)."""

    # the mesh ----------------------------------------------------------------------------

    def detect(self, module: ModuleOp) -> None:
        """The sharding form and the mesh of `module` (a 1-D mesh if it has neither)."""
        meshes = [op for op in module.body.block.ops if op.name == "sdy.mesh"]
        gspmd_strings: list[tuple[Operation, str]] = []
        for op in module.walk():
            for attrs in all_attr_dicts(op):
                s = attrs.get("mhlo.sharding")
                if isinstance(s, StringAttr):
                    gspmd_strings.append((op, s.data))
        if meshes and gspmd_strings:
            raise self.errors.error(
                gspmd_strings[0][0],
                "the module mixes Shardy (sdy.mesh) and GSPMD (mhlo.sharding) "
                "shardings; export it with one of them",
            )
        if meshes:
            self.mode = "sdy"
            if len(meshes) > 1:
                raise self.errors.error(
                    meshes[1],
                    "shardc programs have one mesh, this module declares several sdy.mesh",
                )
            self.stats.ops["sdy.mesh"] += 1
            self.mesh_op = meshes[0]
            self.sdy_mesh(meshes[0])
        elif gspmd_strings:
            self.mode = "gspmd"
            self.mesh_op = gspmd_strings[0][0]
            self.gspmd_mesh(gspmd_strings)
        elif self.devices > 1:
            self.mesh_name = "mesh"
            self.mesh = spmd.MeshAttr([("a", self.devices)])

    def sdy_mesh(self, m: Operation) -> None:
        """`sdy.mesh` as the `spmd.mesh` of the same name and axes."""
        generic = m.properties.get("mesh")
        if isinstance(generic, SdyMeshAttr):  # "sdy.mesh"() <{mesh = #sdy.mesh<...>}>
            m.properties["axis_names"] = generic.axis_names
            m.properties["axis_sizes"] = generic.axis_sizes
            if generic.device_ids.data:
                m.properties["device_ids"] = generic.device_ids
            del m.properties["mesh"]
        error = self.errors.error
        if "axis_names" not in m.properties or not isinstance(
            m.properties.get("sym_name"), StringAttr
        ):
            raise error(m, "sdy.mesh needs a name and axes")
        names = [a.data for a in m.properties["axis_names"].data]  # pyright: ignore
        sizes = [a.data for a in m.properties["axis_sizes"].data]  # pyright: ignore
        if "device_ids" in m.properties:
            ids = ints(m.properties["device_ids"])
            if ids != list(range(len(ids))):
                raise error(
                    m,
                    f"sdy.mesh with device_ids={ids} is not supported: shardc numbers "
                    "devices row-major over the mesh axes",
                )
        if not names:
            raise error(m, "an empty sdy.mesh (maximal sharding) is not supported")
        for attrs in all_attr_dicts(m):
            for k in attrs:
                if k not in SDY_MESH_ATTRS:
                    raise error(m, f"unknown attribute '{k}' on sdy.mesh")
        problem = spmd.mesh_problem(list(zip(names, sizes, strict=False)))
        if problem is not None:
            raise error(m, problem)
        self.mesh_name = m.properties["sym_name"].data  # pyright: ignore
        self.mesh = spmd.MeshAttr(list(zip(names, sizes, strict=False)))
        if self.devices > 1 and self.mesh.device_count != self.devices:
            raise error(
                m,
                f"sdy.mesh has {self.mesh.device_count} devices but the module says "
                f"mhlo.num_partitions x mhlo.num_replicas = {self.devices}",
            )

    def gspmd_mesh(self, gspmd_strings: list[tuple[Operation, str]]) -> None:
        """One mesh on which every `mhlo.sharding` tile assignment is a set of axes."""
        self.stats.constructs["mhlo.sharding"] += len(gspmd_strings)
        builder = hs.MeshBuilder(self.devices)
        for op, text in gspmd_strings:
            sharding = self.parse_gspmd(op, text)
            if sharding.kind in ("tiled", "tuple") and self.devices == 1:
                builder = hs.MeshBuilder(hs.device_count(sharding))
                self.devices = builder.devices
            problem = builder.add(sharding)
            if problem is not None:
                raise self.errors.error(op, f'mhlo.sharding "{text}": {problem}')
        axes = builder.axes()
        if isinstance(axes, str):
            raise self.errors.error(gspmd_strings[0][0], axes)
        self.mesh_builder = builder
        self.mesh_name = "mesh"
        self.mesh = spmd.MeshAttr(axes)

    # shardings ---------------------------------------------------------------------------

    def parse_gspmd(self, op: Operation, text: str) -> hs.HloSharding:
        try:
            return hs.parse_hlo_sharding(text)
        except hs.ShardingSyntaxError as e:
            raise self.errors.error_at_name(op, text, f'bad mhlo.sharding "{text}": {e}') from None

    def sdy_to_spmd(
        self, op: Operation, attr: Attribute, rank: int, what: str, keep_open: bool = False
    ) -> spmd.ShardingAttr | None:
        """
        An sdy sharding as `#spmd.sharding`; None when it constrains nothing. With
        `keep_open` its open dimensions stay open (`{"x", ?}`) for `spmd-propagate` to
        extend (a fully open sharding on a value of rank > 0 is then kept, not None);
        without, they are closed as written (manual computations' in/out shardings).
        User priorities (`{"x"}p1`) are kept with `keep_open` (for `spmd-propagate`), else
        dropped.
        """
        if not isinstance(attr, SdyShardingAttr):
            raise self.errors.error(op, f"{what}: expected a #sdy.sharding, got {attr}")
        if self.mesh is None or attr.mesh_name != self.mesh_name:
            raise self.errors.error_at_name(
                op,
                "@" + attr.mesh_name,
                f"{what}: sharding names mesh @{attr.mesh_name}, which is not declared",
            )
        dims = attr.dim_axes
        if len(dims) != rank:
            raise self.errors.error(
                op, f"{what}: sharding has {len(dims)} dimensions but the tensor has rank {rank}"
            )
        for d in dims + [attr.unreduced_axes]:
            for a in d:
                self.check_axis(op, a, what)
        if any(attr.open_dims):
            self.stats.constructs["sdy open dimension"] += 1
        if any(p is not None for p in attr.dim_priorities):
            self.stats.constructs["sdy user priority"] += 1
        if all(attr.open_dims) and not any(dims) and not attr.unreduced_axes and rank:
            if not keep_open:
                return None
        try:  # what ShardingAttr verifies (an axis used twice, ...) is the input's fault
            if keep_open:
                opens = [i for i, o in enumerate(attr.open_dims) if o]
                return spmd.ShardingAttr(  # pyright: ignore
                    self.mesh_name, dims, attr.unreduced_axes, opens, attr.dim_priorities
                )
            return spmd.ShardingAttr(self.mesh_name, dims, attr.unreduced_axes)  # pyright: ignore
        except VerifyException as e:
            raise self.errors.error(op, f"{what}: {e}") from None

    def fully_open(self, rank: int) -> spmd.ShardingAttr | None:
        """
        What a Shardy module's unannotated argument or result is: open in every dimension
        (propagation decides it, as in Shardy). None (replicated) in a GSPMD module or one
        without shardings, where XLA too reads a missing sharding as replicated.
        """
        if self.mode != "sdy" or not rank:
            return None
        self.stats.constructs["sdy unannotated (open)"] += 1
        assert self.mesh_name is not None
        return spmd.ShardingAttr(self.mesh_name, [[] for _ in range(rank)], (), range(rank))

    def check_axis(self, op: Operation, axis: str, what: str) -> None:
        """A whole axis of the mesh (sub-axes are an error)."""
        assert self.mesh is not None
        if ":" in axis:
            name, _, sub = axis.partition(":")
            raise self.errors.error_at_name(
                op,
                f'"{name}":{sub}',
                f'{what}: sub-axis "{name}":{sub} is not supported (shardc splits '
                "a dimension by whole mesh axes)",
            )
        if axis not in self.mesh.names:
            raise self.errors.error_at_name(
                op, f'"{axis}"', f'{what}: mesh @{self.mesh_name} has no axis "{axis}"'
            )

    def gspmd_to_spmd(
        self, op: Operation, text: str, rank: int, what: str
    ) -> spmd.ShardingAttr | None | str:
        """A GSPMD sharding as `#spmd.sharding` (None: replicated); "manual" for {manual}."""
        s = self.parse_gspmd(op, text)
        if s.kind == "manual":
            return "manual"
        if s.kind in ("replicated", "maximal"):
            if s.kind == "maximal":
                self.stats.constructs["mhlo.sharding maximal (as replicated)"] += 1
            assert self.mesh_name is not None
            return spmd.ShardingAttr(self.mesh_name, [[] for _ in range(rank)])
        error = self.errors.error
        if s.kind != "tiled":
            raise error(op, f'{what}: a {s.kind} sharding "{text}" is not supported here')
        if "manual" in s.last_tile_dims:
            raise error(
                op,
                f'{what}: partially manual sharding "{text}" is not supported '
                "(shard_map must be manual over every mesh axis)",
            )
        if s.tile_rank != rank:
            raise error(
                op,
                f'{what}: sharding "{text}" has {s.tile_rank} tile dimensions but the '
                f"tensor has rank {rank}",
            )
        assert self.mesh_builder is not None and self.mesh_name is not None
        dims, _ = self.mesh_builder.dim_axes(s)
        return spmd.ShardingAttr(self.mesh_name, dims)

    def sharding_attr_of(
        self,
        op: Operation,
        attrs: dict[str, Attribute],
        rank: int,
        what: str,
        keep_open: bool = False,
    ) -> spmd.ShardingAttr | None:
        """The sharding an argument / result attribute dictionary declares."""
        if "sdy.sharding" in attrs:
            self.stats.constructs["sdy.sharding"] += 1
            return self.sdy_to_spmd(op, attrs["sdy.sharding"], rank, what, keep_open)
        s = attrs.get("mhlo.sharding")
        if isinstance(s, StringAttr):
            r = self.gspmd_to_spmd(op, s.data, rank, what)
            if r == "manual":
                raise self.errors.error(op, f"{what}: {{manual}} sharding on a function boundary")
            return r  # pyright: ignore[reportReturnType]
        return None
