"""Reading chrome traces (ember's and PyTorch/Kineto's) into compact columns.

A trace file is read as a stream: the top-level object key by key, and ``traceEvents`` one event
at a time, each reduced at once to the few fields the analyses use (name, category, ts, dur,
stream, correlation, pid, tid) with names interned. Memory stays near the size of the columns
rather than of a list of parsed dicts. Malformed input raises ``TraceFormatError`` naming the file
and what is missing.

The event selection and the iteration of each event follow Holistic Trace Analysis' documented
semantics:

* events without ``dur`` or ``cat`` (metadata, flow, instant events) and ``cat == "Trace"`` are
  dropped;
* when any timestamp is fractional (nanosecond-resolution traces) ``ts`` is rounded up and the end
  rounded down (``dur = floor(ts + dur) - ceil(ts)``);
* a CPU event (``args.stream`` absent, i.e. -1; or a ``cpu_op`` on stream 0) belongs to the
  iteration N of the ``ProfilerStep#N`` whose ``[ts, ts + dur)`` holds its start;
* a GPU event (stream > 0) belongs to the iteration of the CPU event that launched it (same
  ``args.correlation``); without one, to none (-1).
"""
import codecs
import gzip
import json
import os
import re
import sys
import warnings

import numpy as np


class TraceFormatError(ValueError):
    """A trace file that cannot be read: names the file and what is wrong or missing."""


_WS = re.compile(r"[ \t\n\r]*")
_STEP = re.compile(r"ProfilerStep\s*#\s*(\d+)")
_SYNC_NAMES = ("Event Sync", "Context Sync")
_DECODER = json.JSONDecoder()


class _Stream:
    """Incremental JSON reading over a (possibly gzip'd) file."""

    CHUNK = 1 << 20

    def __init__(self, path):
        self.path = path
        raw = open(path, "rb")
        self.fh = gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else raw
        self._raw = raw
        self.dec = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # characters dropped from the front of buf
        self.scanned = 0   # characters handed to the JSON decoder (linear in the file's length)

    def close(self):
        self.fh.close()
        self._raw.close()

    def _fill(self, want=0):
        """Append at least ``want`` (and at least CHUNK) more bytes of the file to the buffer."""
        if self.eof:
            return False
        try:
            data = self.fh.read(max(self.CHUNK, want))
        except (OSError, EOFError) as e:
            raise TraceFormatError(f"trace file {self.path}: cannot decompress ({e})") from None
        try:
            text = self.dec.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise TraceFormatError(f"trace file {self.path}: not UTF-8 text ({e})") from None
        if not data:
            self.eof = True
        self.consumed += self.pos
        self.buf = self.buf[self.pos:] + text
        self.pos = 0
        return bool(data) or bool(text)

    def peek(self):
        """The next non-space character (None at the end of the file)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill() and self.eof:
                self.pos = _WS.match(self.buf, self.pos).end()
                return self.buf[self.pos] if self.pos < len(self.buf) else None

    def expect(self, ch, what):
        c = self.peek()
        if c != ch:
            self._fail(f"expected {ch!r} {what}, found {'end of file' if c is None else repr(c)}")
        self.pos += 1

    def value(self, what):
        """Decode one JSON value.

        A value that runs past the buffered text is retried after reading as much again as is
        pending (the buffer doubles), so a value of n characters costs O(n) in all, however long
        (a retry after every fixed-size chunk would cost O(n**2/CHUNK)). ``scanned`` counts the
        characters handed to the decoder, for the tests."""
        self.peek()
        while True:
            pending = len(self.buf) - self.pos
            self.scanned += pending
            try:
                v, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                # an error well before the end of the buffered text is in the file, not in the cut
                if self.eof or (e.pos + 64 < len(self.buf) and not e.msg.startswith("Unterminated")):
                    self._fail(f"invalid JSON in {what} ({e.msg})", self.consumed + e.pos)
                self._fill(pending)
                continue
            except RecursionError:
                self._fail(f"{what} is nested too deeply (more levels of JSON arrays/objects than "
                           f"Python's recursion limit, {sys.getrecursionlimit()})")
            if end >= len(self.buf) and not self.eof:  # a number may continue in the next chunk
                self._fill()
                continue
            self.pos = end
            return v

    def _fail(self, msg, at=None):
        at = self.consumed + self.pos if at is None else at
        if self.eof and at >= self.consumed + len(self.buf) - 1:
            msg += " - the file is truncated"
        raise TraceFormatError(f"trace file {self.path}: {msg} at character {at}")


class TraceData:
    """One rank's events as columns, plus the file's metadata."""

    def __init__(self, path, meta, names, cats, cols, float_ts):
        self.path = path
        self.meta = meta
        self.names = names            # id -> string
        self.cats = cats
        self.index = cols["index"]    # position in traceEvents
        self.name = cols["name"]
        self.cat = cols["cat"]
        self.ts = cols["ts"]
        self.dur = cols["dur"]
        self.stream = cols["stream"]
        self.correlation = cols["correlation"]
        self.pid = cols["pid"]
        self.tid = cols["tid"]
        self.float_ts = float_ts
        self.iteration = None
        self.steps = {}               # iteration -> (ts, dur) of the ProfilerStep event

    @property
    def rank(self):
        return self.meta["distributedInfo"]["rank"]

    def __len__(self):
        return len(self.name)


_I64 = 1 << 63
_TS_MAX = 1 << 62


def _num(v, path, i, field):
    """A timestamp or duration: a number of magnitude below 2**62, so that ts + dur fits int64 (a
    numeric string is read as its number)."""
    if isinstance(v, str) and not isinstance(v, bool):
        try:
            v = float(v) if ("." in v or "e" in v.lower() or "n" in v.lower()) else int(v)
        except ValueError:
            pass
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TraceFormatError(f"trace file {path}: traceEvents[{i}] has a non-numeric {field!r}: "
                               f"{_show(v)}")
    if not abs(v) < _TS_MAX:  # ts + dur must not overflow int64 either (nor be nan/inf)
        raise TraceFormatError(f"trace file {path}: traceEvents[{i}] has {field!r} = {_show(v)}, out of "
                               f"range (a finite number of magnitude below 2**62 is expected)")
    return v


def _int_arg(v, path, i, field):
    """``args.stream`` / ``args.correlation``: an int in int64's range; -1 when absent."""
    if v is None:
        return -1
    if isinstance(v, bool) or not isinstance(v, int) or not -_I64 <= v < _I64:
        raise TraceFormatError(f"trace file {path}: traceEvents[{i}] has args.{field} = {_show(v)}, "
                               f"expected an integer below 2**63")
    return v


def _show(v):
    """A short repr of a bad value for an error message (a hostile one can be huge)."""
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _where(path, i, name=None):
    return f"trace file {path}: traceEvents[{i}]" + ("" if name is None else f" ({_show(name)})")


def read_trace_file(path):
    """Read one trace file (``.json`` or ``.json.gz``) into a ``TraceData``."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise TraceFormatError(f"trace file {path} does not exist")
    s = _Stream(path)
    try:
        meta = {}
        names, name_ids = [], {}
        cats, cat_ids = [], {}
        idx, nm, ct, ts, du, st, co, pi, ti = ([] for _ in range(9))
        float_ts = False
        seen_events = False
        c = s.peek()
        if c is None:
            raise TraceFormatError(f"trace file {path} is empty")
        if c == "[":  # the bare-array form of the chrome trace format
            keys = iter([("traceEvents", True)])
        else:
            s.expect("{", "at the start of the trace object")
            keys = None
        while True:
            if keys is not None:
                item = next(keys, None)
                if item is None:
                    break
                key = item[0]
            else:
                c = s.peek()
                if c == "}":
                    s.pos += 1
                    break
                key = s.value("a key of the trace object")
                if not isinstance(key, str):
                    s._fail("expected a key string in the trace object")
                s.expect(":", f"after key {key!r}")
            if key != "traceEvents":
                meta[key] = s.value(f"the value of {key!r}")
            else:
                seen_events = True
                s.expect("[", "at the start of 'traceEvents'")
                i = 0
                if s.peek() == "]":
                    s.pos += 1
                else:
                    while True:
                        e = s.value(f"traceEvents[{i}]")
                        if not isinstance(e, dict):
                            raise TraceFormatError(f"trace file {path}: traceEvents[{i}] is not an object "
                                                   f"({type(e).__name__})")
                        d = e.get("dur")
                        cat = e.get("cat")
                        if d is not None and cat is not None and cat != "Trace":
                            name = e.get("name")
                            if name is None:
                                raise TraceFormatError(
                                    f"trace file {path}: traceEvents[{i}] (cat {_show(cat)}) has no 'name'")
                            if type(name) is not str:
                                raise TraceFormatError(f"{_where(path, i)} has a 'name' of type "
                                                       f"{type(name).__name__} ({_show(name)}), expected a string")
                            if type(cat) is not str:
                                raise TraceFormatError(f"{_where(path, i, name)} has a 'cat' of type "
                                                       f"{type(cat).__name__} ({_show(cat)}), expected a string")
                            t = e.get("ts")
                            if t is None:
                                raise TraceFormatError(
                                    f"trace file {path}: traceEvents[{i}] ({name!r}) has no 'ts'")
                            t = _num(t, path, i, "ts")
                            d = _num(d, path, i, "dur")
                            if not float_ts and type(t) is float:
                                float_ts = True
                            k = name_ids.get(name)
                            if k is None:
                                k = name_ids[name] = len(names)
                                names.append(name)
                            nm.append(k)
                            k = cat_ids.get(cat)
                            if k is None:
                                k = cat_ids[cat] = len(cats)
                                cats.append(cat)
                            ct.append(k)
                            a = e.get("args")
                            if type(a) is dict:
                                st.append(_int_arg(a.get("stream"), path, i, "stream"))
                                co.append(_int_arg(a.get("correlation"), path, i, "correlation"))
                            else:
                                st.append(-1)
                                co.append(-1)
                            pid, tid = e.get("pid", -1), e.get("tid", -1)
                            for field, v in (("pid", pid), ("tid", tid)):
                                if not (type(v) is str or type(v) is int and -_I64 <= v < _I64):
                                    raise TraceFormatError(f"{_where(path, i, name)} has {field!r} = "
                                                           f"{_show(v)}, expected an integer or a string")
                            idx.append(i)
                            ts.append(t)
                            du.append(d)
                            pi.append(pid)
                            ti.append(tid)
                        elif "ts" in e and type(e["ts"]) is float:
                            float_ts = True
                        elif "ts" not in e:
                            float_ts = True  # a missing ts makes the whole column fractional
                        i += 1
                        c = s.peek()
                        if c == ",":
                            s.pos += 1
                            continue
                        if c == "]":
                            s.pos += 1
                            break
                        s._fail(f"expected ',' or ']' after traceEvents[{i - 1}], found "
                                f"{'end of file' if c is None else repr(c)}")
            if keys is None:
                c = s.peek()
                if c == ",":
                    s.pos += 1
                elif c != "}":
                    s._fail(f"expected ',' or '}}' after {key!r}, found "
                            f"{'end of file' if c is None else repr(c)}")
    finally:
        s.close()
    if not seen_events:
        raise TraceFormatError(f"trace file {path} has no 'traceEvents' list")
    if not isinstance(meta.get("distributedInfo", {}), dict):
        raise TraceFormatError(f"trace file {path}: 'distributedInfo' is not an object")
    di = meta.setdefault("distributedInfo", {})
    if "rank" not in di:
        warnings.warn(f"trace file {path} has no distributedInfo.rank: reading it as rank 0",
                      stacklevel=3)
        di["rank"] = 0
    if not isinstance(di["rank"], int) or isinstance(di["rank"], bool) or di["rank"] < 0:
        raise TraceFormatError(f"trace file {path}: distributedInfo.rank must be a non-negative "
                               f"integer, got {di['rank']!r}")

    def ints(v):  # every value was checked to fit
        return np.asarray(v, dtype=np.int64)

    ts_a = np.asarray(ts, dtype=np.float64 if float_ts else np.int64)
    du_a = np.asarray(du, dtype=np.float64 if any(type(x) is float for x in du) else np.int64)
    if float_ts:  # as HTA: start rounded up, end rounded down
        end = np.floor(ts_a + du_a)
        ts_a = np.ceil(ts_a)
        du_a = end - ts_a
    cols = {"index": np.asarray(idx, dtype=np.int64), "name": np.asarray(nm, dtype=np.int64),
            "cat": np.asarray(ct, dtype=np.int64), "ts": ts_a, "dur": du_a,
            "stream": ints(st), "correlation": ints(co), "pid": pi, "tid": ti}
    td = TraceData(path, meta, names, cats, cols, float_ts)
    _add_iterations(td)
    return td


def _add_iterations(td):
    """The iteration of every event (see the module docstring); -1 where it has none."""
    n = len(td)
    it = np.full(n, -1, dtype=np.int64)
    steps = []
    for k, name in enumerate(td.names):
        if name.startswith("ProfilerStep"):
            m = _STEP.match(name)
            if m is not None:
                steps.append((k, int(m.group(1))))
    step_rows = []
    if steps:
        ids = dict(steps)
        rows = np.nonzero(np.isin(td.name, list(ids)))[0]
        for r in rows:  # file order; a later step wins where steps overlap
            step_rows.append((td.ts[r], td.dur[r], ids[int(td.name[r])]))
    td.steps = {num: (t, d) for t, d, num in step_rows}
    cpu_cat = td.cats.index("cpu_op") if "cpu_op" in td.cats else -1
    host = (td.stream < 0) | ((td.stream == 0) & (td.cat == cpu_cat))
    ts = td.ts
    for t, d, num in step_rows:
        it[host & (ts >= t) & (ts < t + d)] = num
    # GPU events: the iteration of the CPU event with the same correlation id
    gpu = td.stream > 0
    if gpu.any():
        sync_ids = [td.names.index(s) for s in _SYNC_NAMES if s in td.names]
        corr = td.correlation
        is_gpu_side = ((td.stream >= 0) & (corr >= 0)) | np.isin(td.name, sync_ids)
        linked = np.minimum(corr, 0)  # -1: no link; 0: link not in the trace; >0: index
        has = corr != -1
        gpu_rows = np.nonzero(has & is_gpu_side)[0]
        by_corr = {}
        for r in gpu_rows:
            by_corr.setdefault(int(corr[r]), []).append(r)
        for r in np.nonzero(has & ~is_gpu_side)[0]:
            for g in by_corr.get(int(corr[r]), ()):
                linked[r] = td.index[g]
                linked[g] = td.index[r]
        pos_of_index = {int(ix): p for p, ix in enumerate(td.index)}
        for g in np.nonzero(gpu)[0]:
            lk = int(linked[g])
            it[g] = it[pos_of_index[lk]] if lk > 0 and lk in pos_of_index else -1
    td.iteration = it


def trace_files(trace_dir):
    """The trace files of a folder (``*.json``, ``*.gz``), sorted by name."""
    if not os.path.isdir(trace_dir):
        raise TraceFormatError(f"trace folder {trace_dir} does not exist or is not a folder")
    files = sorted(f for f in os.listdir(trace_dir) if f.endswith(".json") or f.endswith(".gz"))
    if not files:
        raise TraceFormatError(f"trace folder {trace_dir} has no trace files (*.json or *.json.gz)")
    return [os.path.join(trace_dir, f) for f in files]


def read_trace_dir(trace_dir):
    """``{rank: TraceData}`` for the files of a folder (one file per rank)."""
    out = {}
    for f in trace_files(trace_dir):
        td = read_trace_file(f)
        r = td.rank
        if r in out:
            raise TraceFormatError(f"trace folder {trace_dir}: files {out[r].path} and {f} are both "
                                   f"rank {r} (one file per rank is expected)")
        out[r] = td
    return out
