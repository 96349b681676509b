"""The intermediate representation both backends execute.

One ``Program`` per (message, version): a flat list of ``StructProgram``s (the root first), each with
its fields in wire order as ``FieldOp``s whose every property is a small int, a bool or a reference by
index, fixed for that version: kind, array-ness, nullability, compact encoding, tag. Nothing in it
is a Python closure, so the Cython backend can copy it into C arrays and loop over it.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import definitions
from ..definitions import FieldDef, MessageDef, StructDef
from ..exceptions import UnsupportedVersionError

# Field kinds. Arrays are FieldOps with array=True whose kind is the element's kind.
BOOL, INT8, INT16, UINT16, INT32, UINT32, INT64, FLOAT64, UUID, STRING, BYTES, RECORDS, STRUCT = range(1, 14)
KIND_OF_TYPE = {"bool": BOOL, "int8": INT8, "int16": INT16, "uint16": UINT16, "int32": INT32,
                "uint32": UINT32, "int64": INT64, "float64": FLOAT64, "uuid": UUID, "string": STRING,
                "bytes": BYTES, "records": RECORDS}
KIND_NAMES = {v: k for k, v in KIND_OF_TYPE.items()} | {STRUCT: "struct"}
FIXED_SIZE = {BOOL: 1, INT8: 1, INT16: 2, UINT16: 2, INT32: 4, UINT32: 4, INT64: 8, FLOAT64: 8, UUID: 16}

# How a field's default is made: a shared immutable value, a new list, or a new struct.
DEFAULT_VALUE, DEFAULT_LIST, DEFAULT_STRUCT = 0, 1, 2


class FieldOp:
    __slots__ = ("name", "attr", "kind", "array", "nullable", "compact", "struct", "tag", "default",
                 "default_make", "ignorable", "fixed_size")

    def __init__(self, name: str, attr: str, kind: int, array: bool, nullable: bool, compact: bool,
                 struct: int, tag: int, default: Any, default_make: int, ignorable: bool) -> None:
        self.name = name          # Kafka's field name
        self.attr = attr          # the Python attribute
        self.kind = kind
        self.array = array
        self.nullable = nullable  # in this version
        self.compact = compact    # compact (flexible) length encoding in this version
        self.struct = struct      # index into Program.structs, -1 when not a struct
        self.tag = tag            # -1 when not tagged in this version
        self.default = default    # immutable default, or the struct class for DEFAULT_STRUCT
        self.default_make = default_make
        self.ignorable = ignorable
        self.fixed_size = FIXED_SIZE.get(kind, 0) if not array else 0

    def __repr__(self) -> str:
        flags = [f for f, on in (("array", self.array), ("nullable", self.nullable),
                                 ("compact", self.compact), ("ignorable", self.ignorable)) if on]
        tag = f" tag={self.tag}" if self.tag >= 0 else ""
        s = f" struct={self.struct}" if self.struct >= 0 else ""
        return f"<{self.attr}: {KIND_NAMES[self.kind]}{s}{tag} {' '.join(flags)}>"


class StructProgram:
    __slots__ = ("index", "name", "cls", "flexible", "fields", "tagged", "absent", "attrs", "min_size",
                 "tags", "other_tags")

    def __init__(self, index: int, name: str, cls: type, flexible: bool) -> None:
        self.index = index
        self.name = name
        self.cls = cls
        self.flexible = flexible
        self.fields: tuple[FieldOp, ...] = ()   # untagged fields present in this version, wire order
        self.tagged: tuple[FieldOp, ...] = ()   # tagged fields of this version, ascending tag
        self.absent: tuple[FieldOp, ...] = ()   # fields this version lacks: defaults on read, checks on write
        self.attrs: tuple[str, ...] = ()        # every attribute of the class, all versions
        self.min_size = 0                       # fewest bytes an instance can take in this version
        self.tags: dict[int, FieldOp] = {}
        # Tags the struct's fields hold in other versions only, by tag: Kafka's readers refuse them ("Tag 1
        # is not valid for version 12") rather than keep them as unknown tagged fields.
        self.other_tags: dict[int, str] = {}

    def __repr__(self) -> str:
        return f"<StructProgram {self.index} {self.name} min={self.min_size} {list(self.fields)} tagged={list(self.tagged)}>"


class Program:
    __slots__ = ("message", "version", "flexible", "structs", "root", "backend_cache")

    def __init__(self, message: str, version: int, flexible: bool, structs: list[StructProgram]) -> None:
        self.message = message
        self.version = version
        self.flexible = flexible
        self.structs = structs
        self.root = structs[0]
        self.backend_cache: dict[str, Any] = {}  # each backend's own prepared form, made on first use


def compile_program(mdef: MessageDef, version: int, cls: type) -> Program:
    """Compile one message at one version. ``cls`` is its message class; ``cls._STRUCTS`` maps Kafka
    struct type names to the nested classes."""
    if version not in mdef.valid:
        raise UnsupportedVersionError(
            f"{mdef.name} has no version {version} (valid: {mdef.valid.lo}-{mdef.valid.hi})")
    flexible = mdef.is_flexible(version)
    classes: dict[str, type] = dict(getattr(cls, "_STRUCTS", {}))
    structs: list[StructProgram] = []
    index_of: dict[str, int] = {}

    def build(sdef: StructDef, struct_cls: type) -> int:
        if sdef.name in index_of:
            return index_of[sdef.name]
        sp = StructProgram(len(structs), sdef.name, struct_cls, flexible)
        index_of[sdef.name] = sp.index
        structs.append(sp)
        fields: list[FieldOp] = []
        tagged: list[FieldOp] = []
        absent: list[FieldOp] = []
        for f in sdef.fields:
            sub = build(f.struct, classes[f.struct.name]) if f.struct is not None else -1
            present = version in f.versions
            is_tagged = present and flexible and version in f.tagged
            op = _field_op(f, version, flexible, sub, is_tagged, classes)
            (tagged if is_tagged else fields if present else absent).append(op)
        sp.fields = tuple(fields)
        sp.tagged = tuple(sorted(tagged, key=lambda o: o.tag))
        sp.absent = tuple(absent)
        sp.attrs = tuple(f.attr for f in sdef.fields)
        sp.tags = {o.tag: o for o in tagged}
        if flexible:
            sp.other_tags = {f.tag: f.attr for f in sdef.fields if f.tag is not None and f.tag not in sp.tags}
        return sp.index

    build(mdef.root, cls)
    for sp in reversed(structs):  # children come after parents: size them first
        sp.min_size = _min_size(sp, structs)
    return Program(mdef.name, version, flexible, structs)


def _field_op(f: FieldDef, version: int, flexible: bool, sub: int, tagged: bool,
              classes: dict[str, type]) -> FieldOp:
    kind = STRUCT if f.struct is not None else KIND_OF_TYPE[f.elem]
    compact = flexible and (f.flexible is None or version in f.flexible)
    default = f.default_value()
    make = DEFAULT_VALUE
    if default is NotImplemented:
        if f.is_array:
            make, default = DEFAULT_LIST, None
        else:
            make, default = DEFAULT_STRUCT, classes[f.struct.name]  # type: ignore[union-attr]
    return FieldOp(f.name, f.attr, kind, f.is_array, version in f.nullable, compact, sub,
                   f.tag if tagged and f.tag is not None else -1, default, make, f.ignorable)


def _min_size(sp: StructProgram, structs: list[StructProgram]) -> int:
    n = 1 if sp.flexible else 0  # the tagged-field count
    for op in sp.fields:
        n += min_field_size(op, structs)
    return n


def min_field_size(op: FieldOp, structs: list[StructProgram]) -> int:
    if op.array:
        return 1 if op.compact else 4
    if op.kind in FIXED_SIZE:
        return FIXED_SIZE[op.kind]
    if op.kind == STRING:
        return 1 if op.compact else 2
    if op.kind in (BYTES, RECORDS):
        return 1 if op.compact else 4
    if op.kind == STRUCT:
        return 1 if op.nullable else structs[op.struct].min_size
    raise AssertionError(op.kind)


def other_tag(sp: StructProgram, tag: int) -> str:
    """Why a tag that the struct's fields hold in other versions only is refused in this one (both backends,
    reading and writing: Kafka's generated readers throw "Tag N is not valid for version V")."""
    return f"tagged field {tag} is {sp.other_tags[tag]} in other versions, not valid in this one"


def default_of(op: FieldOp) -> Any:
    """A fresh default value for a field as a decoder sets it: a scalar array's is the shared ``()``."""
    if op.default_make == DEFAULT_LIST:
        return [] if op.kind == STRUCT else ()
    if op.default_make == DEFAULT_STRUCT:
        return op.default()
    return op.default


def is_default(op: FieldOp, value: Any) -> bool:
    """Kafka's test for "this field holds its default" (tagged fields are written only when not)."""
    if op.default_make == DEFAULT_LIST:  # (a value without a length is no empty list: not the default)
        return value is not None and hasattr(value, "__len__") and len(value) == 0
    if op.default_make == DEFAULT_STRUCT:
        return value is not None and value == op.default()
    if op.default is None:
        return value is None
    return value is not None and value == op.default


_cache: dict[tuple[type, int], Program] = {}


def program_for(cls: type, version: int) -> Program:
    """The cached program of a message class at a version."""
    key = (cls, version)
    prog = _cache.get(key)
    if prog is None:
        mdef = definitions.get(cls._KAFKA_NAME)  # type: ignore[attr-defined]
        prog = _cache[key] = compile_program(mdef, version, cls)
    return prog
