// clineval report: per-sample tables (search, filters, pages) and detail views.
// Every value from the data goes into the page through textContent, never as markup.
(function () {
  "use strict";
  var PAGE = 50;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function show(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }
  function kv(dl, key, value) {
    dl.appendChild(el("dt", null, key));
    dl.appendChild(el("dd", null, show(value)));
  }

  // Text with character spans highlighted; for overlaps the last span wins (as the metric).
  function highlighted(text, spans, cls) {
    var box = el("div", "text");
    var labels = new Array(text.length);
    spans.forEach(function (s) {
      for (var i = Math.max(0, s[0]); i < Math.min(text.length, s[1]); i++) labels[i] = s[2];
    });
    var i = 0;
    while (i < text.length) {
      var j = i, lab = labels[i];
      while (j < text.length && labels[j] === lab) j++;
      var chunk = text.slice(i, j);
      if (lab === undefined) {
        box.appendChild(document.createTextNode(chunk));
      } else {
        var m = el("span", "ent " + cls, chunk);
        m.title = lab;
        box.appendChild(m);
        box.appendChild(el("sub", "muted", lab));
      }
      i = j;
    }
    return box;
  }

  var DETAIL = {
    ner: function (row, box) {
      box.appendChild(el("h4", null, "Document " + row.id + " — gold"));
      box.appendChild(highlighted(row.text || "", row.gold || [], "gold"));
      box.appendChild(el("h4", null, "Predicted"));
      box.appendChild(highlighted(row.text || "", row.pred || [], "pred"));
    },
    tcm: function (row, box) {
      var dl = el("dl");
      ["id", "gold", "pred", "valid", "correct", "raw_output"].forEach(function (k) {
        kv(dl, k === "pred" ? "predicted" : k === "raw_output" ? "raw model output" : k, row[k]);
      });
      box.appendChild(dl);
    },
    cc: function (row, box, spec) {
      box.appendChild(el("h4", null, "Case " + row.id + " — " + row.s + " criteria met"));
      box.appendChild(el("h4", null, "Query"));
      box.appendChild(el("div", "text query", row.query));
      box.appendChild(el("h4", null, "Answer"));
      box.appendChild(el("div", "text answer", row.answer));
      var t = el("table", "verdicts");
      var hr = t.createTHead().insertRow();
      ["criterion", "text", "verdict", "judge", "explanation"].forEach(function (h) {
        hr.appendChild(el("th", null, h));
      });
      var body = t.createTBody();
      (row.v || []).forEach(function (v) {
        var tr = body.insertRow();
        tr.insertCell().textContent = show(v[0]);
        tr.insertCell().textContent = show(v[1]);
        var c = tr.insertCell();
        if (v[2] === true) { c.textContent = "met"; c.className = "verdict-met"; }
        else if (v[2] === false) { c.textContent = "not met"; c.className = "verdict-unmet"; }
        else { c.textContent = "judge error"; c.className = "verdict-error"; }
        tr.insertCell().textContent = show((spec.judges || [])[v[4]]);
        tr.insertCell().textContent = show(v[3]);
      });
      box.appendChild(el("h4", null, "Verdicts"));
      box.appendChild(t);
    },
    generic: function (row, box) {
      var dl = el("dl");
      Object.keys(row).forEach(function (k) { kv(dl, k, row[k]); });
      box.appendChild(dl);
    }
  };

  // A data block is plain JSON, or gzip + base64 for big runs (decompressed by the browser).
  function readSpec(node) {
    var text = node.textContent;
    if (node.getAttribute("data-encoding") !== "gzip-base64") {
      return Promise.resolve(JSON.parse(text));
    }
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser cannot read compressed data (no DecompressionStream)"));
    }
    var bin = atob(text.trim());
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  function initTable(root, spec) {
    var rows = spec.rows;
    var search = root.querySelector("input.search");
    var filterBox = root.querySelector(".filters");
    var table = root.querySelector("table.samples");
    var info = root.querySelector(".page-info");
    var prev = root.querySelector("button.prev");
    var next = root.querySelector("button.next");
    var detail = root.querySelector(".detail");
    var hr = table.createTHead().insertRow();
    spec.columns.forEach(function (c) { hr.appendChild(el("th", null, c.label)); });
    var tbody = table.createTBody();
    var selects = spec.filters.map(function (f) {
      var s = el("select");
      s.setAttribute("data-key", f.key);
      s.setAttribute("aria-label", f.label);
      var all = el("option", null, f.label + ": all");
      all.value = "";
      s.appendChild(all);
      f.values.forEach(function (v) {
        var o = el("option", null, f.label + ": " + v);
        o.value = v;
        s.appendChild(o);
      });
      s.addEventListener("change", apply);
      filterBox.appendChild(s);
      return s;
    });
    var keys = spec.columns.map(function (c) { return c.key; }).concat(spec.search || []);
    var hay = new Array(rows.length);
    function haystack(i) {
      if (hay[i] === undefined) {
        hay[i] = keys.map(function (k) { return show(rows[i][k]); }).join("\u0001").toLowerCase();
      }
      return hay[i];
    }
    var matched = [], page = 0, selected = -1;

    function apply() {
      var q = search.value.trim().toLowerCase();
      var active = selects.filter(function (s) { return s.value !== ""; })
        .map(function (s) { return [s.getAttribute("data-key"), s.value]; });
      matched = [];
      for (var i = 0; i < rows.length; i++) {
        var ok = true;
        for (var a = 0; a < active.length && ok; a++) ok = show(rows[i][active[a][0]]) === active[a][1];
        if (ok && q && haystack(i).indexOf(q) < 0) ok = false;
        if (ok) matched.push(i);
      }
      page = 0;
      render();
    }

    function render() {
      var pages = Math.max(1, Math.ceil(matched.length / PAGE));
      page = Math.min(page, pages - 1);
      var frag = document.createDocumentFragment();
      matched.slice(page * PAGE, (page + 1) * PAGE).forEach(function (i) {
        var tr = el("tr");
        tr.setAttribute("data-index", String(i));
        if (i === selected) tr.className = "selected";
        spec.columns.forEach(function (c) { tr.appendChild(el("td", null, show(rows[i][c.key]))); });
        tr.addEventListener("click", function () { select(i); });
        frag.appendChild(tr);
      });
      tbody.replaceChildren(frag);
      info.textContent = matched.length + " of " + rows.length + " samples · page " + (page + 1) +
        " / " + pages;
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
    }

    function select(i) {
      selected = i;
      tbody.querySelectorAll("tr").forEach(function (tr) {
        tr.className = tr.getAttribute("data-index") === String(i) ? "selected" : "";
      });
      detail.replaceChildren();
      (DETAIL[spec.detail] || DETAIL.generic)(rows[i], detail, spec);
    }

    var timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(apply, 120);
    });
    prev.addEventListener("click", function () { page--; render(); });
    next.addEventListener("click", function () { page++; render(); });
    apply();
    if (spec.autoshow && rows.length) select(0);
    root.setAttribute("data-ready", "1");
  }

  var pending = [];
  document.querySelectorAll("[data-sample-table]").forEach(function (root) {
    var node = document.getElementById(root.getAttribute("data-sample-table"));
    pending.push(readSpec(node).then(function (spec) { initTable(root, spec); }, function (err) {
      root.querySelector(".detail").textContent = "Could not read the sample data: " + err.message;
    }));
  });
  // The value is ms since navigation start: the benchmark reads it as the time to open.
  Promise.all(pending).then(function () {
    document.body.setAttribute("data-report-ready", String(Math.max(1, Math.round(performance.now()))));
  });
})();
