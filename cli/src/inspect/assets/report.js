// acph inspect: renders the recording embedded in this page. Everything from the recording is
// set with textContent or as an attribute value, never parsed as markup. The timeline shows one
// page of rows at a time and the wire pane only the rows in view, so a recording of any size
// keeps a small DOM.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('data').textContent);
  var rows = D.rows, wire = D.wire;
  var PAGE = 200, WH = 22, CAP = 20000, DIFF_CAP = 2000, DETAIL_CAP = 200000;
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function secs(t) {
    if (typeof t !== 'number') return '';
    return t < 1 ? (t * 1000).toFixed(1) + ' ms' : t.toFixed(3) + ' s';
  }
  // Long text: the first CAP characters, and a button for the rest.
  function longText(tag, cls, s) {
    var e = el(tag, cls);
    s = String(s);
    if (s.length <= CAP) { e.textContent = s; return e; }
    e.textContent = s.slice(0, CAP);
    var b = el('button', 'more', 'show all ' + s.length + ' characters');
    b.type = 'button';
    b.addEventListener('click', function (ev) { ev.stopPropagation(); e.textContent = s; });
    var box = el('div');
    box.appendChild(e); box.appendChild(b);
    return box;
  }
  function jsonText(v) {
    var s = JSON.stringify(v, null, 2);
    return s === undefined ? String(v) : s;
  }
  function part(p) {
    if (p.text !== undefined || p.pre !== undefined) {
      var t = p.text !== undefined ? longText('div', 'text', p.text) : longText('pre', '', p.pre);
      if (!p.label) return t;
      var labelled = el('div');
      labelled.appendChild(el('div', 'label', p.label));
      labelled.appendChild(t);
      return labelled;
    }
    if (p.kv) {
      var box = el('div');
      if (p.label) box.appendChild(el('div', 'label', p.label));
      var dl = el('dl', 'kv');
      p.kv.forEach(function (pair) {
        dl.appendChild(el('dt', '', pair[0]));
        dl.appendChild(el('dd', '', pair[1]));
      });
      box.appendChild(dl);
      return box;
    }
    if (p.diff) {
      var d = el('div', 'diff');
      d.appendChild(el('div', 'path', 'diff ' + p.diff.path));
      var lines = p.diff.lines, shown = Math.min(lines.length, DIFF_CAP);
      var add = function (from, to) {
        for (var i = from; i < to; i++) {
          var l = el('div', 'dl', lines[i][0] + ' ' + lines[i][1]);
          l.setAttribute('data-op', lines[i][0]);
          d.appendChild(l);
        }
      };
      add(0, shown);
      if (shown < lines.length) {
        var b = el('button', 'more', 'show all ' + lines.length + ' lines');
        b.type = 'button';
        b.addEventListener('click', function (ev) { ev.stopPropagation(); b.remove(); add(shown, lines.length); });
        d.appendChild(b);
      }
      return d;
    }
    if (p.json !== undefined) {
      var det = el('details', 'json');
      det.appendChild(el('summary', '', p.label || 'JSON'));
      // Pretty-printed only when opened: a large payload costs nothing until then.
      det.addEventListener('toggle', function () {
        if (det.open && det.childNodes.length === 1) det.appendChild(longText('pre', '', jsonText(p.json)));
      }, { once: false });
      return det;
    }
    return el('div', 'text', jsonText(p));
  }

  // Facts of the header and the summary.
  (D.header || []).forEach(function (p) { $('header').appendChild(part(p)); });
  var S = D.summary || {};
  var sum = $('summary');
  sum.appendChild(document.createTextNode(
    (D.file ? D.file + ': ' : '') + wire.length + ' wire messages, ' + S.events + ' events, ' +
    rows.length + ' timeline rows. '));
  if (!S.ended) sum.appendChild(el('span', 'warn', 'No end line: the recording was cut short. '));
  if (S.skipped) sum.appendChild(el('span', 'warn', S.skipped + ' lines skipped (shown in the timeline). '));
  if (S.end && S.end.truncated) sum.appendChild(el('span', 'warn', 'Truncated at its size bound. '));
  if (S.end && S.end.droppedLines) sum.appendChild(el('span', 'warn', S.end.droppedLines + ' lines dropped. '));
  if (D.file) { document.title = 'ACP recording: ' + D.file; $('title').textContent = document.title; }

  // Which rows each wire message is linked from.
  var back = new Map();
  rows.forEach(function (r, i) {
    r.w.forEach(function (w) {
      var l = back.get(w);
      if (!l) { l = []; back.set(w, l); }
      l.push(i);
    });
  });

  // The filter: every kind with its count.
  var counts = new Map();
  rows.forEach(function (r) { counts.set(r.k, (counts.get(r.k) || 0) + 1); });
  Array.from(counts.keys()).sort().forEach(function (k) {
    var o = el('option', '', k + ' (' + counts.get(k) + ')');
    o.value = k;
    $('filter').appendChild(o);
  });

  var view = rows.map(function (_, i) { return i; });
  var page = 0, selRow = -1, hitRows = new Set(), selWire = -1, hitWire = new Set();

  function rowEl(i) {
    var r = rows[i];
    var e = el('div', 'row');
    e.setAttribute('data-kind', r.k);
    if (r.e) e.setAttribute('data-event', r.e);
    e.setAttribute('data-row', String(i));
    if (i === selRow) e.classList.add('sel');
    if (hitRows.has(i)) e.classList.add('hit');
    var m = el('div', 'meta');
    m.appendChild(el('span', 't', secs(r.t)));
    m.appendChild(el('span', 'kind', r.e && r.e !== r.k ? r.e + ' · ' + r.k : r.k));
    if (r.s) m.appendChild(el('span', 'sess', 'session ' + r.s + (r.n !== undefined ? ' · turn ' + r.n : '')));
    if (r.w.length) m.appendChild(el('span', 'links', r.w.length === 1 ? 'wire #' + r.w[0] : r.w.length + ' wire messages from #' + r.w[0]));
    e.appendChild(m);
    e.appendChild(el('div', 'title', r.h));
    r.p.forEach(function (p) { e.appendChild(part(p)); });
    e.addEventListener('click', function (ev) {
      if (ev.target.closest && ev.target.closest('details, button')) return;
      selectRow(i);
    });
    return e;
  }

  function renderPage() {
    var pages = Math.max(1, Math.ceil(view.length / PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    var from = page * PAGE, to = Math.min(view.length, from + PAGE);
    var frag = document.createDocumentFragment();
    for (var j = from; j < to; j++) frag.appendChild(rowEl(view[j]));
    $('timeline').replaceChildren(frag);
    $('range').textContent = view.length ? 'rows ' + (from + 1) + '–' + to + ' of ' + view.length : 'no rows';
    $('prev').disabled = page === 0;
    $('next').disabled = page >= pages - 1;
  }
  $('prev').addEventListener('click', function () { page--; renderPage(); $('timeline').scrollTop = 0; });
  $('next').addEventListener('click', function () { page++; renderPage(); $('timeline').scrollTop = 0; });
  $('filter').addEventListener('change', function () {
    var k = $('filter').value;
    view = [];
    rows.forEach(function (r, i) { if (!k || r.k === k) view.push(i); });
    page = 0;
    renderPage();
  });

  // Show row i: its page (the whole list when the filter hides it), scrolled into view.
  function showRow(i) {
    var at = view.indexOf(i);
    if (at < 0) { $('filter').value = ''; view = rows.map(function (_, j) { return j; }); at = i; }
    page = Math.floor(at / PAGE);
    renderPage();
    // Scrolls the timeline only, not the page around it.
    var tl = $('timeline'), e = tl.querySelector('[data-row="' + i + '"]');
    if (e) tl.scrollTop = Math.max(0, e.offsetTop - tl.clientHeight / 3);
  }

  // The wire pane: only the rows in view (and a margin) are in the DOM.
  var pane = $('wire'), spacer = $('wire-spacer');
  spacer.style.height = (wire.length * WH) + 'px';
  $('wire-count').textContent = 'Wire: ' + wire.length + ' messages';
  function wireEl(i) {
    var w = wire[i];
    var e = el('div', 'w');
    e.setAttribute('data-wire', String(i));
    e.setAttribute('data-dir', w[1]);
    e.style.top = (i * WH) + 'px';
    if (i === selWire) e.classList.add('sel');
    if (hitWire.has(i)) e.classList.add('hit');
    e.appendChild(el('span', 'i', '#' + i));
    e.appendChild(el('span', 't', secs(w[0])));
    e.appendChild(el('span', 'd', w[1] === 'in' ? '← in  ' : '→ out '));
    e.appendChild(el('span', 'l', w[2]));
    e.title = w[2];
    return e;
  }
  var pending = false;
  function renderWire() {
    pending = false;
    var h = pane.clientHeight || 400;
    var first = Math.max(0, Math.floor(pane.scrollTop / WH) - 10);
    var last = Math.min(wire.length, first + Math.ceil(h / WH) + 20);
    var frag = document.createDocumentFragment();
    for (var i = first; i < last; i++) frag.appendChild(wireEl(i));
    spacer.replaceChildren(frag);
  }
  pane.addEventListener('scroll', function () {
    if (!pending) { pending = true; requestAnimationFrame(renderWire); }
  });
  spacer.addEventListener('click', function (ev) {
    var e = ev.target.closest ? ev.target.closest('[data-wire]') : null;
    if (e) selectWire(Number(e.getAttribute('data-wire')));
  });
  // Message i in view: the pane scrolls (centring it) only when it is not already visible.
  function scrollWire(i) {
    var top = i * WH;
    if (top < pane.scrollTop || top + WH > pane.scrollTop + pane.clientHeight) {
      pane.scrollTop = Math.max(0, top - pane.clientHeight / 2);
    }
    renderWire();
  }

  function detail(title, list) {
    var d = $('detail');
    var frag = document.createDocumentFragment();
    frag.appendChild(el('h2', '', title));
    list.slice(0, 20).forEach(function (i) {
      var w = wire[i];
      frag.appendChild(el('h2', '', '#' + i + ' ' + w[1] + ' at ' + secs(w[0]) + ': ' + w[2]));
      var s = jsonText(w[3]);
      frag.appendChild(el('pre', '', s.length > DETAIL_CAP ? s.slice(0, DETAIL_CAP) + '\n… (' + s.length + ' characters)' : s));
    });
    if (list.length > 20) frag.appendChild(el('p', 'hint', (list.length - 20) + ' more messages'));
    d.replaceChildren(frag);
  }

  // An event clicked: its wire messages highlighted, the first scrolled to.
  function selectRow(i) {
    setHash('#row=' + i);
    selRow = i; hitRows = new Set(); selWire = -1;
    hitWire = new Set(rows[i].w);
    showRow(i);
    if (rows[i].w.length) scrollWire(rows[i].w[0]); else renderWire();
    detail(rows[i].w.length ? 'Wire messages of this event' : 'No wire message for this event', rows[i].w);
  }
  // A wire message clicked: the events it caused highlighted (else the nearest one before it).
  function selectWire(i) {
    setHash('#wire=' + i);
    selWire = i; hitWire = new Set(); selRow = -1;
    var linked = back.get(i) || [];
    if (!linked.length) {
      var best = -1;
      rows.forEach(function (r, j) { if (r.t <= wire[i][0]) best = j; });
      if (best >= 0) linked = [best];
    }
    hitRows = new Set(linked);
    scrollWire(i);
    detail(back.has(i) ? 'Wire message (its events are highlighted)' : 'Wire message (no event of its own; the nearest event before it is highlighted)', [i]);
    if (linked.length) showRow(linked[0]); else renderPage();
  }

  // `#row=N` / `#wire=N` selects a row or a wire message: a link into the report to share.
  function fromHash() {
    var m = /^#(row|wire)=(\d+)$/.exec(location.hash);
    if (!m) return false;
    var n = Number(m[2]);
    if (m[1] === 'row' && n < rows.length) { selectRow(n); return true; }
    if (m[1] === 'wire' && n < wire.length) { selectWire(n); return true; }
    return false;
  }
  function setHash(h) {
    try { history.replaceState(null, '', h); } catch (e) { /* file: URLs may refuse; the selection stays */ }
  }
  window.addEventListener('hashchange', fromHash);

  if (!fromHash()) { renderPage(); renderWire(); }
  document.body.setAttribute('data-ready', String(rows.length));
})();
