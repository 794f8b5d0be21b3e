#!/usr/bin/env python3
"""scripts/test-inspect's checks of `acph inspect` pages, on the DOM Chromium dumped after the
page's script ran (stdlib only). Each command exits non-zero with the reason on a failed check.

  kinds REC DOM          a row (data-kind) for every kind of event REC holds
  has DOM KIND...        rows of these kinds (`op=+`/`op=-`: diff lines) are in the DOM
  linked-wire DOM N      row N is selected and its wire messages highlighted
  linked-rows DOM N      wire message N is selected and its events highlighted
  png FILE               a real screenshot: a PNG of some size that is not one colour
  hostile                print a recording whose agent text tries to become markup
  not-markup DOM         nothing of the hostile recording ran or became an element
  big N                  print a recording of N wire messages
  bounded DOM REC HTML   the big page loaded, its DOM rows bounded, its size linear in REC's
"""
import json
import struct
import sys
import zlib
from html.parser import HTMLParser


class Dom(HTMLParser):
    """Every element's tag and attributes, in document order, and the text."""

    def __init__(self, path):
        super().__init__(convert_charrefs=True)
        self.elements = []
        self.text = []
        with open(path, encoding="utf-8") as f:
            self.feed(f.read())

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def rows(self):
        return [a for t, a in self.elements if "row" in a.get("class", "").split() and "data-kind" in a]

    def wires(self):
        return [a for t, a in self.elements if "data-wire" in a]

    def kinds(self):
        return {a["data-kind"] for a in self.rows()}

    def body(self):
        return next((a for t, a in self.elements if t == "body"), {})


def fail(msg):
    print(msg)
    sys.exit(1)


def recording_kinds(path):
    kinds, requests, wire = set(), {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            ev = o.get("event")
            msg = o.get("msg")
            if "dir" in o:
                wire.append(msg if isinstance(msg, dict) else {})
            if isinstance(ev, dict):
                # Format 3: an event in a wire line is the update of the line's message.
                k = "session_update" if "dir" in o else ev.get("kind")
                if k == "session_update":
                    data = ev.get("data")
                    # Format 2: the update is the referenced wire line's (docs/RECORDING.md).
                    if data is None and isinstance(ev.get("wire"), int) and ev["wire"] < len(wire):
                        data = ((wire[ev["wire"]].get("params") or {}).get("update"))
                    if "dir" in o:
                        data = (wire[-1].get("params") or {}).get("update")
                    k = (data or {}).get("sessionUpdate")
                kinds.add(k)
            if isinstance(msg, dict):
                if o.get("dir") == "in" and "method" in msg and "id" in msg:
                    requests[json.dumps(msg["id"])] = msg["method"]
                elif o.get("dir") == "out" and "method" not in msg:
                    if requests.get(json.dumps(msg.get("id"))) == "terminal/output":
                        kinds.add("terminal_output")
            if "end" in o:
                kinds.add("end")
    return kinds


def png_check(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    if len(data) < 20_000:
        fail(f"{path} is only {len(data)} bytes")
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    if width < 400 or height < 300:
        fail(f"{width}x{height} is too small")
    # Scanlines are filtered, so count distinct values and how dominant the commonest is.
    counts = [0] * 256
    for b in raw:
        counts[b] += 1
    distinct = sum(1 for c in counts if c)
    top = max(counts) / len(raw)
    if distinct < 32 or top > 0.98:
        fail(f"looks uniform: {distinct} distinct byte values, the commonest {top:.1%}")
    print(f"{width}x{height}, {len(data)} bytes, {distinct} distinct values")


HOSTILE = [
    '</script><script>document.documentElement.setAttribute("data-pwned","script")</script>',
    "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','img')\">",
    "<!--<script>document.documentElement.setAttribute('data-pwned','comment')</script>-->",
]


def hostile():
    text = " ".join(HOSTILE)
    header = {"acpRecording": 1, "acpHost": text, "platform": {"os": text},
              "agent": {"command": text, "args": [text], "env": [text]}, "protocolVersion": 1,
              "initialize": {"agentInfo": {"name": text, "version": text}, "agentCapabilities": {text: text}}}
    lines = [header]
    upd = lambda u: {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": text, "update": u}}
    for i, u in enumerate([
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
        {"sessionUpdate": "tool_call", "toolCallId": text, "title": text, "kind": text,
         "content": [{"type": "diff", "path": text, "oldText": text, "newText": text + "\n" + text}]},
        {"sessionUpdate": text},
    ]):
        lines.append({"t": i, "dir": "in", "msg": upd(u)})
        lines.append({"t": i, "event": {"kind": "session_update", "session": text, "data": u}})
    lines.append({"t": 5, "event": {"kind": "agent_stderr", "data": {"line": text}}})
    lines.append({"t": 5, "event": {"kind": text, "data": {text: text}}})
    lines.append({"t": 6, "dir": "in", "msg": {"jsonrpc": "2.0", "method": text, "params": {"x": text}}})
    for o in lines:
        print(json.dumps(o))
    print(text)  # a bad line: shown as skipped, quoting nothing of it as markup


def not_markup(path):
    dom = Dom(path)
    html_attrs = next((a for t, a in dom.elements if t == "html"), {})
    if "data-pwned" in html_attrs:
        fail(f"the recording's text ran as script: data-pwned={html_attrs['data-pwned']}")
    if any(t == "img" for t, _ in dom.elements):
        fail("the recording's text became an <img> element")
    scripts = [t for t, _ in dom.elements if t == "script"]
    if len(scripts) != 2:
        fail(f"{len(scripts)} script elements, not the page's own 2")
    if "data-ready" not in dom.body():
        fail("the page's script did not finish")
    text = "".join(dom.text)
    for h in HOSTILE[:2]:
        if h not in text:
            fail(f"the agent's text is not shown as text: {h!r}")
    print(f"{len(dom.rows())} rows, the hostile text shown as text")


def big(n):
    print(json.dumps({"acpRecording": 1, "acpHost": "0.1.0", "protocolVersion": 1,
                      "platform": {"os": "linux", "arch": "x86_64", "family": "unix"},
                      "agent": {"command": "generated", "args": [], "env": []},
                      "initialize": {"agentInfo": {"name": "generated", "version": "1"}}}))
    t = 0.0
    print(json.dumps({"t": t, "event": {"kind": "turn_started", "session": "s", "turn": 1,
                                        "data": {"prompt": [{"type": "text", "text": "go"}]}}}))
    print(json.dumps({"t": t, "dir": "out", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
                                                   "params": {"sessionId": "s", "prompt": []}}}))
    for i in range(n - 2):
        t += 0.0001
        if i % 2:
            u = {"sessionUpdate": "tool_call_update", "toolCallId": f"call_{i}", "status": "completed"}
        else:
            u = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"chunk {i} "}}
        print(json.dumps({"t": t, "dir": "in", "msg": {"jsonrpc": "2.0", "method": "session/update",
                                                      "params": {"sessionId": "s", "update": u}}}))
        print(json.dumps({"t": t, "event": {"kind": "session_update", "session": "s", "turn": 1, "data": u}}))
    print(json.dumps({"t": t, "dir": "in", "msg": {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}}))
    print(json.dumps({"t": t, "event": {"kind": "turn_ended", "session": "s", "turn": 1,
                                        "data": {"stopReason": "end_turn"}}}))
    print(json.dumps({"t": t, "end": {"lines": 2 * n, "bytes": 0, "droppedLines": 0, "truncated": False}}))


def bounded(dom_path, rec, page):
    import os
    dom = Dom(dom_path)
    ready = dom.body().get("data-ready")
    if not ready or int(ready) < 40_000:
        fail(f"the page did not load its rows (data-ready={ready!r})")
    rows, wires = len(dom.rows()), len(dom.wires())
    if not 0 < rows <= 200:
        fail(f"{rows} timeline rows in the DOM (a page is 200)")
    if not 0 < wires <= 150:
        fail(f"{wires} wire rows in the DOM (only those in view)")
    r, p = os.path.getsize(rec), os.path.getsize(page)
    if p > 3 * r + 256 * 1024:
        fail(f"the page is {p} bytes for a {r}-byte recording")
    print(f"{ready} rows, {rows} timeline and {wires} wire rows in the DOM; page {p} bytes, recording {r}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "kinds":
        want, have = recording_kinds(args[0]), Dom(args[1]).kinds()
        missing = sorted(k for k in want if k not in have)
        if missing:
            fail(f"no row for {missing}; rows: {sorted(have)}")
        print(f"every kind shown: {sorted(want)}")
    elif cmd == "has":
        dom = Dom(args[0])
        have = dom.kinds() | {"op=" + a["data-op"] for t, a in dom.elements if "data-op" in a}
        missing = [k for k in args[1:] if k not in have]
        if missing:
            fail(f"missing {missing}; have {sorted(have)}")
    elif cmd in ("linked-wire", "linked-rows"):
        dom, n = Dom(args[0]), args[1]
        cls = lambda a: a.get("class", "").split()
        if cmd == "linked-wire":
            sel = [a for a in dom.rows() if a.get("data-row") == n and "sel" in cls(a)]
            hit = [a["data-wire"] for a in dom.wires() if "hit" in cls(a)]
        else:
            sel = [a for a in dom.wires() if a.get("data-wire") == n and "sel" in cls(a)]
            hit = [a["data-row"] for a in dom.rows() if "hit" in cls(a)]
        if not sel or not hit:
            fail(f"selected: {len(sel)}, highlighted: {hit}")
        print(f"{n} selected, highlighted: {hit}")
    elif cmd == "png":
        png_check(args[0])
    elif cmd == "hostile":
        hostile()
    elif cmd == "not-markup":
        not_markup(args[0])
    elif cmd == "big":
        big(int(args[0]))
    elif cmd == "bounded":
        bounded(*args)
    else:
        fail(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
