"""Columnar decode of the large topic listings: Metadata, DescribeTopicPartitions and ListTopics responses.

    from kcodec import columnar
    t = columnar.metadata_tables(body, version=12)
    t.topics["name"], t.topics["partitions"]          # list of str; int32 offsets into t.partitions
    t.partitions["leader_id"], t.partitions["topic_index"]
    t.partitions["isr_nodes"].offsets, .values         # ragged int lists, numpy offsets + values
    names = columnar.metadata_topic_names(body, 12)    # names and internal flags; partitions skipped

Every struct of the message is a table and every instance a row: ``root`` (one row, its scalars in
``Tables.root``), ``brokers``, ``topics``, ``partitions``, ``next_cursor``. Numbers are numpy arrays,
strings are lists (one object per topic, none per partition), arrays of numbers are ``Lists``
(offsets + values), arrays of structs are offsets into the child table, whose rows carry their
parent's row (``topic_index``). Offsets and row numbers are int32: a Kafka body is under 2 GiB (its
frame size is an int32), and larger buffers are refused. Fields a version lacks are filled with their
defaults, as the object decode does.

The work is done by the Cython module ``kcodec.columnar._columnar`` over the caller's buffer (no copy), run by a
layout compiled from the message's IR. Without the extension (or with ``KCODEC_PURE=1``) the same
tables are built from the object decode; both give identical tables and identical DecodeErrors (byte
offset, field path). numpy is needed by this module only; the rest of kcodec does not import it.

The extension keeps a few large blocks of dropped columns (at most 16 MiB) for the next decode: memory
fresh from the OS costs a page fault per 4 KiB, a quarter of a 10,000-topic decode's time.
``release_memory()`` frees them, ``kept_memory()`` says how much is kept.
"""

from __future__ import annotations

import functools
import importlib
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

import numpy as np

from .. import decode
from ..core.api import _check_version, finish
from ..core.coerce import flat_view
from ..core.extension import load, pure
from ..exceptions import DecodeError
from ..core.ir import (BOOL, BYTES, FIXED_SIZE, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, STRUCT, UINT16,
                 UINT32, UUID, FieldOp, Program, default_of, min_field_size, program_for)
from ..messages import DescribeTopicPartitionsResponse, ListTopicsResponse, MetadataResponse

_columnar: Any = load("kcodec.columnar._columnar")  # None when not built: the tables come from the object decode

ENGINE = "cython" if _columnar is not None and not pure() else "python"

_DTYPE = {BOOL: np.bool_, INT8: np.int8, INT16: np.int16, UINT16: np.uint16, INT32: np.int32,
          UINT32: np.uint32, INT64: np.int64, FLOAT64: np.float64}
FIXED_KINDS = frozenset(_DTYPE)
INDEX = np.int32  # offsets and row numbers

# What a column holds.
SCALAR, UUIDS, OBJECTS, LISTS, CHILDREN, PARENT = range(6)


# ------------------------------------------------------------------------------------------ results

@dataclass
class Lists:
    """A column of variable-length arrays of numbers: row i is ``values[offsets[i]:offsets[i + 1]]``;
    ``nulls`` (bool) marks null arrays when the field is nullable, else it is None."""

    offsets: np.ndarray
    values: np.ndarray
    nulls: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> Optional[np.ndarray]:
        if self.nulls is not None and self.nulls[i]:
            return None
        return self.values[self.offsets[i]:self.offsets[i + 1]]

    def __iter__(self) -> Iterator[Optional[np.ndarray]]:
        return (self[i] for i in range(len(self)))

    def tolist(self) -> list[Optional[list[Any]]]:
        return [None if a is None else a.tolist() for a in self]


@dataclass
class Table:
    """The rows of one struct: columns by field name (numpy arrays, lists of str, ``Lists``)."""

    name: str
    rows: int
    columns: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, column: str) -> Any:
        return self.columns[column]

    def __contains__(self, column: str) -> bool:
        return column in self.columns


@dataclass
class Tables:
    """A response as tables: ``root`` holds its top-level scalars, ``tables`` every struct's rows."""

    message: str
    version: int
    root: dict[str, Any]
    tables: dict[str, Table]

    def __getitem__(self, name: str) -> Table:
        return self.tables[name]

    @property
    def topics(self) -> Table:
        return self.tables["topics"]

    @property
    def partitions(self) -> Table:
        return self.tables["partitions"]


@dataclass
class TopicNames:
    """The names-only scan: topic names and internal flags (plus the response's top-level scalars)."""

    names: list[Optional[str]]
    internal: np.ndarray
    root: dict[str, Any]

    def __len__(self) -> int:
        return len(self.names)

    def to_list_topics_response(self) -> Any:
        """The same answer as a ListTopics (KIP-142) response (topics without a name, which Metadata v12+
        returns for unknown topic ids, are not listed)."""
        Topic = ListTopicsResponse.Topic
        return ListTopicsResponse(throttle_time_ms=self.root.get("throttle_time_ms", 0),
                                  error_code=self.root.get("error_code", 0),
                                  topics=[Topic(name=n, internal=bool(i)) for n, i in zip(self.names, self.internal)
                                          if n is not None])


# ------------------------------------------------------------------------------------------ layouts

@dataclass
class _Column:
    table: int
    attr: str
    what: int
    kind: int = 0
    nullable: bool = False


class _Layout:
    """Which field of which struct feeds which column, compiled once per (message, version, selection)."""

    def __init__(self, prog: Program, keep: Optional[dict[str, Optional[frozenset[str]]]],
                 names_only: Optional[tuple[str, str]] = None) -> None:
        self.prog = prog
        self.names_only = names_only  # (names attr, internal attr) of topics: the result is TopicNames
        structs = prog.structs
        names = ["root"] + [""] * (len(structs) - 1)
        parents = [-1] * len(structs)
        for sp in structs:
            for op in sp.fields + sp.absent:
                if op.kind == STRUCT and not names[op.struct]:
                    names[op.struct] = op.attr
                    parents[op.struct] = sp.index
        if len(set(names)) != len(names):
            raise NotImplementedError(f"{prog.message}: a struct type used by two fields")
        self.names = names
        self.parents = parents
        self.columns: list[_Column] = []
        self.ops: list[tuple[int, FieldOp]] = []        # (column or -1, op), all structs in order
        self.structs: list[tuple[int, int, bool, int]] = []
        self.order: list[list[int]] = [[] for _ in structs]  # each table's columns, in the class's order

        def kept(s: int, attr: str) -> bool:
            if keep is None:
                return True
            want = keep.get(names[s], frozenset())
            return want is None or attr in want

        by_attr: list[dict[str, int]] = [{} for _ in structs]
        pending: list[tuple[int, FieldOp]] = []
        for sp in structs:
            if sp.tagged:
                raise NotImplementedError(f"{prog.message} v{prog.version}: tagged fields in {sp.name}")
            s = sp.index
            parent_col = -1
            if parents[s] > 0 and (keep is None or names[s] in keep):
                parent_col = self._add(_Column(s, names[parents[s]].rstrip("s") + "_index", PARENT))
                self.order[s].append(parent_col)
            first = len(self.ops)
            for op in sp.fields:
                col = -1
                what = _what(op)
                if what is not None and kept(s, op.attr):
                    col = by_attr[s][op.attr] = self._add(_Column(s, op.attr, what, op.kind, op.nullable))
                self.ops.append((col, op))
            pending += [(s, op) for op in sp.absent]
            self.structs.append((first, len(sp.fields), sp.flexible, parent_col))
        self.present = len(self.columns)  # the Cython layout fills these; absent fields' columns follow
        absent: list[tuple[int, FieldOp]] = []  # (column, op) of the fields this version lacks
        for s, op in pending:
            what = _what(op)
            if what is not None and what != CHILDREN and kept(s, op.attr):
                col = by_attr[s][op.attr] = self._add(_Column(s, op.attr, what, op.kind, op.default is None))
                absent.append((col, op))
        for sp in structs:
            self.order[sp.index] += [by_attr[sp.index][a] for a in sp.attrs if a in by_attr[sp.index]]
        plans = [[(self.columns[i].attr, i, self.columns[i].what) for i in cols] for cols in self.order]
        self.table_plans = [(s, names[s], plans[s]) for s in range(1, len(structs))]
        root_plan = [(a, i, what) for a, i, what in plans[0] if what in (UUIDS, SCALAR, OBJECTS, LISTS)]
        # the root's absent fields are the same values every time: made once (not lists: a caller may change
        # one), in the root's order
        root_absent = {col: (_root_value(self.columns[col].what, *_default_column(self.columns[col], op, 1)),)
                       for col, op in absent if self.columns[col].table == 0 and self.columns[col].what != LISTS}
        self.root_values = [(a, i, what, root_absent.get(i)) for a, i, what in root_plan]
        # the other absent fields' columns, made anew by each decode (tables' rows vary; a root list may change)
        self.absent_each_decode: list[tuple[int, FieldOp]] = [(col, op) for col, op in absent if col not in root_absent]
        self.cython = self.result = None
        if _columnar is not None:
            self.cython = _columnar.Layout(
                [(op.kind, op.array, op.nullable, op.compact, op.struct, col,
                  FIXED_SIZE[op.kind] if op.kind in FIXED_KINDS else 0,
                  max(1, min_field_size(_element(op), structs)) if op.array else 0, op.attr)
                 for col, op in self.ops],
                self.structs,
                [_c_spec(c) for c in self.columns[:self.present]])
            self.result = self._compiled_result()

    def _compiled_result(self) -> Any:
        """What the Cython engine makes its result of (kcodec/columnar/_columnar_result.pxi): the same objects as
        _assemble, which the fallback engine uses."""
        return _columnar.Result(*self._result_args())

    def _result_args(self) -> tuple[Any, ...]:
        """_columnar.Result's arguments (tests/test_extension_args.py passes it wrong ones)."""
        read_directly = {i for _, i, what, absent in self.root_values  # a root number needs no array
                         if absent is None and what == SCALAR and self.columns[i].kind in (INT16, INT32)}
        arrays: list[Any] = []  # per present column: its dtypes, their numbers and item sizes (0: uuid rows)
        for i, c in enumerate(self.columns[:self.present]):
            d, vd = np.dtype(_dtype(c)), np.dtype(_DTYPE[c.kind]) if c.kind in _DTYPE else None
            arrays.append(None if i in read_directly else (d, d.num, 0 if c.what == UUIDS else d.itemsize)
                          + ((vd, vd.num, vd.itemsize) if vd is not None else (None, 0, 0)))
        root = [(a, i, what, self.columns[i].kind, absent) for a, i, what, absent in self.root_values]
        absent = [(col, self.columns[col].table, functools.partial(_default_column, self.columns[col], op))
                  for col, op in self.absent_each_decode]
        names = None
        if self.names_only is not None:
            topics = self.order[self.names.index("topics")]
            by_attr = {self.columns[i].attr: i for i in topics}
            names = (by_attr[self.names_only[0]], by_attr[self.names_only[1]])
        _numpy_api()
        api = {"frombuffer": np.frombuffer, "bool_": _BOOL, "arange": np.arange, "index": INDEX,
               "root_value": _root_value, "Tables": Tables, "Table": Table, "Lists": Lists, "TopicNames": TopicNames}
        return (arrays, self.table_plans, root, absent, names, len(self.columns), self.prog.message, self.prog.version,
                api)

    def _add(self, c: _Column) -> int:
        self.columns.append(c)
        return len(self.columns) - 1


_numpy_api_used: Optional[bool] = None


def _numpy_api() -> bool:
    """Whether the extension makes its arrays through numpy's C API (checked once; else numpy.frombuffer)."""
    global _numpy_api_used
    if _numpy_api_used is None:
        try:
            capsule = _numpy_capsule()
        except (ImportError, AttributeError):  # a numpy without the table where numpy 1 and 2 keep it
            capsule = None
        _numpy_api_used = bool(_columnar.use_numpy_api(capsule, np.ndarray, _arrays_made_right))
    return _numpy_api_used


def _numpy_capsule() -> Any:
    """numpy's C-API table, as numpy's import_array() finds it."""
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")  # numpy 2
    except ImportError:
        umath = importlib.import_module("numpy.core._multiarray_umath")  # numpy 1
    return umath._ARRAY_API


def _arrays_made_right(make: Any) -> bool:
    """Trial arrays made through the C API are what numpy.frombuffer would make (use_numpy_api's check)."""
    raw = np.arange(-1, 3, dtype=np.int32).tobytes()
    a = make(np.dtype(np.int32).num, 4, raw)
    u = make(np.dtype(np.uint8).num, 0, bytes(range(32)))
    return bool(type(a) is np.ndarray and a.dtype == np.int32 and a.flags.c_contiguous and a.flags.writeable
                and np.array_equal(a, np.frombuffer(raw, np.int32)) and type(u) is np.ndarray
                and u.dtype == np.uint8 and u.shape == (2, 16) and u[1].tolist() == list(range(16, 32)))


def _element(op: FieldOp) -> FieldOp:
    return FieldOp(op.name, op.attr, op.kind, False, False, op.compact, op.struct, -1, None, 0, False)


def _what(op: FieldOp) -> Optional[int]:
    """The column a field makes, or None (arrays of strings, bytes or uuids; single structs: tables)."""
    if op.array:
        return LISTS if op.kind in FIXED_KINDS else CHILDREN if op.kind == STRUCT else None
    if op.kind in FIXED_KINDS:
        return SCALAR
    if op.kind == UUID:
        return UUIDS
    if op.kind in (STRING, BYTES, RECORDS):
        return OBJECTS
    return None


def _c_spec(c: _Column) -> tuple[int, int, int, int, int]:
    """(itemsize, value size, null mask, Python list, offsets) for the Cython layout."""
    if c.what == SCALAR:
        return FIXED_SIZE[c.kind], 0, 0, 0, 0
    if c.what == UUIDS:
        return 16, 0, 0, 0, 0
    if c.what == OBJECTS:
        return 0, 0, 0, 1, 0
    if c.what == PARENT:
        return 4, 0, 0, 0, 0
    if c.what == LISTS:
        return 4, FIXED_SIZE[c.kind], int(c.nullable), 0, 1
    return 4, 0, int(c.nullable), 0, 1  # CHILDREN


_layouts: dict[tuple[type, int, bool], _Layout] = {}


def _layout(cls: type, version: int, names_only: bool) -> _Layout:
    key = (cls, version, names_only)
    lay = _layouts.get(key)
    if lay is None:
        _check_version(version)
        prog = program_for(cls, version)
        keep: Optional[dict[str, Optional[frozenset[str]]]] = None
        names: Optional[tuple[str, str]] = None
        if names_only:
            root = frozenset(op.attr for op in prog.root.fields + prog.root.absent if not op.array
                             and op.kind != STRUCT)
            names = ("name", _internal_attr(cls))
            keep = {"root": root, "topics": frozenset(names)}
        lay = _layouts[key] = _Layout(prog, keep, names)
    return lay


def _internal_attr(cls: type) -> str:
    return "internal" if cls is ListTopicsResponse else "is_internal"


# ------------------------------------------------------------------------------------------ engines

Raw = tuple[list[int], list[tuple[Any, Any, Any, Any]]]  # rows per table; (data, values, nulls, objects)


_BOOL = np.dtype(np.bool_)


def _run_cython(lay: _Layout, data: Any, strict: bool) -> Any:
    """The result (Tables, or TopicNames for a names-only layout), made by the extension."""
    prog = lay.prog
    try:
        out = _columnar.tables(lay.cython, lay.result, data)
    except (BufferError, ValueError):  # not contiguous (numpy says ValueError): copied, as the Python engine does
        view = memoryview(data)
        if view.c_contiguous:
            raise
        out = _columnar.tables(lay.cython, lay.result, flat_view(view))
    if not out[0]:
        _, reason, offset, path = out
        raise DecodeError(reason, offset, _path_text(path), prog.message, prog.version)
    _, pos, end, result = out
    if pos != end:
        finish(None, pos, end, strict, prog.message, prog.version)
    return result


def _path_text(path: list[Any]) -> str:
    out = ""
    for p in reversed(path):
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def _dtype(c: _Column) -> Any:
    if c.what == SCALAR:
        return _DTYPE[c.kind]
    if c.what == UUIDS:
        return np.uint8
    return INDEX


def _run_python(lay: _Layout, cls: type, data: Any, strict: bool) -> Raw:
    """The same columns from the object decode (the fallback, and the oracle in tests)."""
    obj: Any = decode(cls, data, lay.prog.version, strict=strict)
    ncols = lay.present
    rows = [0] * len(lay.structs)
    datas: list[list[Any]] = [[0] if lay.columns[i].what in (LISTS, CHILDREN) else [] for i in range(ncols)]
    values: list[list[Any]] = [[] for _ in range(ncols)]
    nulls: list[list[bool]] = [[] for _ in range(ncols)]

    def walk(s: int, o: Any, parent: int) -> None:
        row = rows[s]
        rows[s] += 1
        first, count, _, parent_col = lay.structs[s]
        if parent_col >= 0:
            datas[parent_col].append(parent)
        for col, op in lay.ops[first:first + count]:
            v = getattr(o, op.attr)
            if op.kind == STRUCT:
                for e in (v or ()) if op.array else (() if v is None else (v,)):
                    walk(op.struct, e, row)
                if col >= 0:
                    datas[col].append(rows[op.struct])
            elif col < 0:
                continue
            elif op.array:
                values[col].extend(v or ())
                datas[col].append(len(values[col]))
            else:
                datas[col].append(v.bytes if op.kind == UUID else v)
            if col >= 0 and lay.columns[col].nullable and op.array:
                nulls[col].append(v is None)

    walk(0, obj, -1)
    raw: list[tuple[Any, Any, Any, Any]] = []
    for i, c in enumerate(lay.columns[:ncols]):
        if c.what == OBJECTS:
            raw.append((None, None, None, datas[i]))
        elif c.what == UUIDS:
            raw.append((np.frombuffer(b"".join(datas[i]), dtype=np.uint8).reshape(-1, 16), None, None, None))
        else:
            raw.append((np.array(datas[i], dtype=_dtype(c)),
                        np.array(values[i], dtype=_DTYPE[c.kind]) if c.what == LISTS else None,
                        np.array(nulls[i], dtype=np.bool_) if c.nullable and c.what in (LISTS, CHILDREN)
                        else None, None))
    return rows, raw


def _assemble(lay: _Layout, rows: list[int], raw: list[tuple[Any, Any, Any, Any]]) -> Tables:
    raw = list(raw) + [(None, None, None, None)] * (len(lay.columns) - len(raw))
    for col, op in lay.absent_each_decode:  # fields this version lacks: their defaults, as the object decode gives
        raw[col] = _default_column(lay.columns[col], op, rows[lay.columns[col].table])
    tables = {}
    for s, name, plan in lay.table_plans:
        columns = {}
        for attr, i, what in plan:
            d, v, n, objs = raw[i]
            if what == OBJECTS:
                columns[attr] = objs
            elif what == LISTS:
                columns[attr] = Lists(d, v, n)
            elif what == CHILDREN and n is not None:
                columns[attr] = Lists(d, np.arange(d[-1], dtype=INDEX), n)
            else:
                columns[attr] = d
        tables[name] = Table(name, rows[s], columns)
    root: dict[str, Any] = {}
    for attr, i, what, absent in lay.root_values:  # one row: values (an absent field's is made already)
        root[attr] = _root_value(what, *raw[i]) if absent is None else absent[0]
    return Tables(lay.prog.message, lay.prog.version, root, tables)


def _root_value(what: int, d: Any, v: Any, n: Any, objs: Any) -> Any:
    """The value of a column of the root (one row)."""
    if what == UUIDS:
        return uuid.UUID(bytes=d.tobytes())
    if what == SCALAR:
        return d.item(0)
    if what == OBJECTS:
        return objs[0]
    return Lists(d, v, n).tolist()[0]


def _default_column(c: _Column, op: FieldOp, n: int) -> tuple[Any, Any, Any, Any]:
    value = default_of(op)
    if c.what == OBJECTS:
        return None, None, None, [value] * n
    if c.what == UUIDS:
        return np.tile(np.frombuffer(value.bytes, dtype=np.uint8), (n, 1)), None, None, None
    if c.what == SCALAR:
        return np.full(n, value, dtype=_DTYPE[c.kind]), None, None, None
    # LISTS: Kafka's defaults for arrays are empty or null
    nulls = np.full(n, value is None, dtype=np.bool_) if c.nullable else None
    return np.zeros(n + 1, dtype=INDEX), np.zeros(0, dtype=_DTYPE[c.kind]), nulls, None


def _tables(cls: type, data: Any, version: int, strict: bool, names_only: bool, engine: Optional[str]) -> Any:
    """Tables, or TopicNames when names_only."""
    lay = _layout(cls, version, names_only)
    if (engine or ENGINE) == "cython":
        if lay.cython is None:
            raise RuntimeError("kcodec.columnar._columnar is not built")
        return _run_cython(lay, data, strict)  # (the extension refuses a body of 2 GiB or more itself)
    view = memoryview(data)
    if view.nbytes > 0x7FFFFFFF:  # offsets and row numbers are int32, as a frame's size is
        raise ValueError("a Kafka body is under 2 GiB")
    if not view.c_contiguous:  # as the extension does: the object decode refuses such a buffer
        data = flat_view(view)
    t = _assemble(lay, *_run_python(lay, cls, data, strict))
    if lay.names_only is not None:
        return TopicNames(t.topics[lay.names_only[0]], t.topics[lay.names_only[1]], t.root)
    return t


# ------------------------------------------------------------------------------------------ public

def tables(cls: type, data: Any, version: int, *, strict: bool = True, engine: Optional[str] = None) -> Tables:
    """Any of MetadataResponse, DescribeTopicPartitionsResponse, ListTopicsResponse as tables.
    ``engine`` ("cython" or "python") overrides the automatic choice (for tests)."""
    if cls not in (MetadataResponse, DescribeTopicPartitionsResponse, ListTopicsResponse):
        raise TypeError(f"columnar decode covers Metadata, DescribeTopicPartitions and ListTopics responses, "
                        f"not {getattr(cls, '__name__', cls)}")
    return _tables(cls, data, version, strict, False, engine)  # type: ignore[no-any-return]


def topic_names(cls: type, data: Any, version: int, *, strict: bool = True,
                engine: Optional[str] = None) -> TopicNames:
    """Topic names and internal flags, skipping every partition (the ListTopics view)."""
    if cls not in (MetadataResponse, DescribeTopicPartitionsResponse, ListTopicsResponse):
        raise TypeError(f"no names-only scan for {getattr(cls, '__name__', cls)}")
    return _tables(cls, data, version, strict, True, engine)  # type: ignore[no-any-return]


def kept_memory() -> tuple[int, int]:
    """(blocks, bytes) of dropped columns the extension keeps for the next decode (at most 16 MiB)."""
    return (0, 0) if _columnar is None else _columnar.kept_memory()


def release_memory() -> int:
    """Frees the blocks of dropped columns kept for the next decode; returns how many bytes."""
    return 0 if _columnar is None else _columnar.release_kept()


def metadata_tables(data: Any, version: int, *, strict: bool = True) -> Tables:
    """A Metadata response body (v0-13) as tables: brokers, topics, partitions."""
    return tables(MetadataResponse, data, version, strict=strict)


def metadata_topic_names(data: Any, version: int, *, strict: bool = True) -> TopicNames:
    """Names and internal flags of a Metadata response's topics; partitions are checked, not kept."""
    return topic_names(MetadataResponse, data, version, strict=strict)


def describe_topic_partitions_tables(data: Any, version: int = 0, *, strict: bool = True) -> Tables:
    """A DescribeTopicPartitions response body as tables: topics, partitions, next_cursor."""
    return tables(DescribeTopicPartitionsResponse, data, version, strict=strict)


def describe_topic_partitions_topic_names(data: Any, version: int = 0, *, strict: bool = True) -> TopicNames:
    return topic_names(DescribeTopicPartitionsResponse, data, version, strict=strict)


def list_topics_tables(data: Any, version: int, *, strict: bool = True) -> Tables:
    return tables(ListTopicsResponse, data, version, strict=strict)


def list_topics_topic_names(data: Any, version: int, *, strict: bool = True) -> TopicNames:
    return topic_names(ListTopicsResponse, data, version, strict=strict)
