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
  // A column may declare the decimals its fractional numbers are shown with, and that its
  // lists of scalars are shown joined.
  function columnText(col, v) {
    if (col.join && Array.isArray(v)) return v.map(show).join(", ");
    if (typeof col.digits === "number" && typeof v === "number" && !Number.isInteger(v)) {
      return v.toFixed(col.digits);
    }
    return show(v);
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

  // A detail view is data a benchmark declares (a list of parts); this one renderer draws
  // every benchmark's, so a plugin's view is drawn like a built-in's.
  function fill(template, row) {
    return String(template).replace(/\{([A-Za-z0-9_]+)\}/g, function (_, k) { return show(row[k]); });
  }
  function cellText(col, value, spec) {
    if (col.lookup) return show((spec[col.lookup] || [])[value]);
    if (col.labels) {
      var key = value === true ? "true" : value === false ? "false" : value === null || value === undefined ? "null" : String(value);
      if (Object.prototype.hasOwnProperty.call(col.labels, key)) return col.labels[key];
    }
    return show(value);
  }
  var PART = {
    heading: function (part, row, box) { box.appendChild(el("h4", null, fill(part.text, row))); },
    text: function (part, row, box) {
      if (part.title) box.appendChild(el("h4", null, fill(part.title, row)));
      box.appendChild(el("div", "text " + part.key, show(row[part.key])));
    },
    spans: function (part, row, box) {
      if (part.title) box.appendChild(el("h4", null, fill(part.title, row)));
      box.appendChild(highlighted(show(row[part.text]), row[part.spans] || [], part.style || "gold"));
    },
    fields: function (part, row, box) {
      var dl = el("dl");
      (part.fields || Object.keys(row).map(function (k) { return [k, k]; })).forEach(function (f) {
        kv(dl, f[1], row[f[0]]);
      });
      box.appendChild(dl);
    },
    rows: function (part, row, box, spec) {
      if (part.title) box.appendChild(el("h4", null, fill(part.title, row)));
      var t = el("table", ("detail-rows " + (part["class"] || "")).trim());
      var hr = t.createTHead().insertRow();
      part.columns.forEach(function (c) { hr.appendChild(el("th", null, c.label)); });
      var body = t.createTBody();
      (row[part.key] || []).forEach(function (item) {
        var tr = body.insertRow();
        part.columns.forEach(function (c) {
          var value = item[c.index];
          var td = tr.insertCell();
          td.textContent = cellText(c, value, spec);
          if (c.classes) {
            var key = value === true ? "true" : value === false ? "false" : value === null || value === undefined ? "null" : String(value);
            if (c.classes[key]) td.className = c.classes[key];
          }
        });
      });
      box.appendChild(t);
    }
  };
  function drawDetail(row, box, spec) {
    var parts = spec.detail && spec.detail.length ? spec.detail : [{ part: "fields" }];
    parts.forEach(function (part) { (PART[part.part] || PART.fields)(part, row, box, spec); });
  }

  // Sorting by a column: numbers as numbers, text in the reader's locale; a second click
  // reverses. Used by the sample tables and by every table the report marks sortable.
  function sortValue(v) {
    if (typeof v === "number") return v;
    var s = show(v).replace(/,/g, "");
    var n = parseFloat(s);
    return s !== "" && isFinite(n) && /^[-+]?[0-9.]+(e[-+]?[0-9]+)?%?$/i.test(s) ? n : show(v);
  }
  function compareValues(a, b) {
    var x = sortValue(a), y = sortValue(b);
    if (typeof x === "number" && typeof y === "number") return x - y;
    if (typeof x === "number") return -1;
    if (typeof y === "number") return 1;
    return String(x).localeCompare(String(y));
  }
  function makeSortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.classList.add("sortable");
      th.setAttribute("title", "sort by this column");
      th.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "descending" ? 1 : -1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          return dir * compareValues(r1.cells[col].textContent, r2.cells[col].textContent);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  document.querySelectorAll("table.sortable").forEach(makeSortable);

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
    var sortKey = null, sortDir = 1;
    spec.columns.forEach(function (c) {
      var th = el("th", "sortable", c.label);
      th.setAttribute("title", "sort by this column");
      th.addEventListener("click", function () {
        sortDir = sortKey === c.key ? -sortDir : -1;
        sortKey = c.key;
        Array.prototype.forEach.call(hr.cells, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", sortDir === 1 ? "ascending" : "descending");
        sortMatched();
        render();
      });
      hr.appendChild(th);
    });
    function sortMatched() {
      if (sortKey === null) return;
      matched.sort(function (i, j) {
        return sortDir * compareValues(rows[i][sortKey], rows[j][sortKey]) || i - j;
      });
    }
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
      sortMatched();
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
        spec.columns.forEach(function (c) { tr.appendChild(el("td", null, columnText(c, rows[i][c.key]))); });
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
      drawDetail(rows[i], detail, spec);
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
  // Downloads: the rows are made into a CSV file in the page (a Blob), so they travel
  // compressed and no request leaves the page.
  // A cell a spreadsheet would run as a formula gets a leading apostrophe, a number excepted:
  // the rule of clineval's CSV writer (clineval/csv_text.py).
  function csvField(v) {
    var s = show(v);
    if (/^[=+\-@\t\r]/.test(s) && !/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(s)) s = "'" + s;
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  document.querySelectorAll("a.download-link").forEach(function (link) {
    var node = document.getElementById(link.getAttribute("data-source"));
    pending.push(readSpec(node).then(function (data) {
      var lines = [data.columns.map(csvField).join(",")];
      data.rows.forEach(function (row) { lines.push(row.map(csvField).join(",")); });
      var blob = new Blob([lines.join("\n") + "\n"], { type: "text/csv;charset=utf-8" });
      link.href = URL.createObjectURL(blob);
    }, function (err) {
      link.textContent += " (unavailable: " + err.message + ")";
    }));
  });
  // The value is ms since navigation start: the benchmark reads it as the time to open.
  Promise.all(pending).then(function () {
    document.body.setAttribute("data-report-ready", String(Math.max(1, Math.round(performance.now()))));
  });
})();
