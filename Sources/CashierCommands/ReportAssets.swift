/// The report's style sheet and script: constants, the same for every folder. Nothing from
/// the folder is ever put in them (the script reads the table's cells as text), so the
/// folder's strings never meet a script or style context.
enum ReportAssets {
    static let style = """

        :root { color-scheme: light; --ink: #1d232b; --muted: #5c6773; --line: #d9dee4; --accent: #2f6fb3;
          --expired: #fff4d6; --damaged: #fde2e1; --bar: #4a8fd4; font: 14px/1.45 system-ui, -apple-system,
          "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: #f6f7f9; }
        body { margin: 0; }
        header, main { max-width: 1180px; margin: 0 auto; padding: 0 20px; }
        header { padding-top: 18px; }
        h1 { font-size: 22px; margin: 0 0 2px; }
        h2 { font-size: 16px; margin: 22px 0 10px; }
        .folder { margin: 0; word-break: break-all; }
        .generated, .hint, .note { color: var(--muted); }
        .generated { margin: 2px 0 0; font-size: 12px; }
        code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
        section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 4px 16px 14px;
          margin: 14px 0; }
        .cards { display: flex; flex-wrap: wrap; gap: 10px; }
        .card { flex: 1 1 140px; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px;
          display: flex; flex-direction: column; }
        .card.expired { background: var(--expired); }
        .card.damaged { background: var(--damaged); }
        .label { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
        .value { font-size: 22px; font-weight: 600; }
        .note { font-size: 12px; }
        .meter { height: 6px; background: #e8ebef; border-radius: 3px; margin-top: 6px; overflow: hidden; }
        .meter div { height: 100%; background: var(--accent); }
        .meter.over div { background: #c0392b; }
        .charts { display: flex; flex-wrap: wrap; gap: 10px 20px; }
        figure { margin: 0; }
        figcaption { font-weight: 600; margin-bottom: 4px; }
        svg.chart { max-width: 100%; height: auto; font-size: 12px; }
        svg.chart rect { fill: var(--bar); }
        svg.chart text { fill: var(--ink); }
        svg.chart text.amount { fill: var(--muted); }
        .thumbs { display: flex; flex-wrap: wrap; gap: 10px; }
        .thumb { width: 108px; text-align: center; }
        .thumb img { width: 64px; height: 64px; object-fit: contain; image-rendering: pixelated;
          background: repeating-conic-gradient(#eee 0 25%, #fff 0 50%) 0 0 / 12px 12px;
          border: 1px solid var(--line); border-radius: 4px; }
        .thumb figcaption { font-weight: normal; font-size: 12px; display: flex; flex-direction: column; }
        .thumb .key, td:first-child { word-break: break-all; }
        .tools { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: baseline; }
        #filter { font: inherit; padding: 3px 6px; width: 18em; border: 1px solid var(--line); border-radius: 4px; }
        table { border-collapse: collapse; width: 100%; font-size: 13px; }
        th { text-align: left; border-bottom: 2px solid var(--line); white-space: nowrap; }
        th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 6px 14px 6px 4px;
          cursor: pointer; color: var(--ink); }
        th[aria-sort] button { color: var(--accent); }
        th[aria-sort=ascending] button::after { content: " \\25B2"; font-size: 9px; }
        th[aria-sort=descending] button::after { content: " \\25BC"; font-size: 9px; }
        td { padding: 3px 4px; border-bottom: 1px solid #eef0f3; vertical-align: top; }
        td:not(:first-child) { white-space: nowrap; }
        .number { text-align: right; }
        th.number button { padding: 6px 4px 6px 14px; }
        tr.expired td { background: var(--expired); }
        tr.damaged td { background: var(--damaged); }
        tr.expired td:last-child, tr.damaged td:last-child { font-weight: 600; }
        tr.damaged td:last-child { color: #a12622; }

        """

    /// Sorting by a click on a column (again to reverse), filtering by part of a key, and
    /// `#sort=COLUMN`, `#sort=COLUMN-reversed` or `#filter=TEXT` in the address. The key,
    /// size, age and expires columns sort by the ranks `list --sort` gives each row; the
    /// others by their text, then by key. At the end it marks the body `data-state="ready"`.
    static let script = """

        "use strict";
        (function () {
          var table = document.getElementById("entries-table");
          var body = table.tBodies[0];
          var rows = Array.prototype.slice.call(body.rows);
          var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
          var filter = document.getElementById("filter");
          var shown = document.getElementById("shown");
          var rankOf = { key: 0, size: 1, age: 2, expires: 3 };
          var keys = rows.map(function (row) { return row.cells[0].textContent.toLowerCase(); });
          var ranks = rows.map(function (row) {
            return row.getAttribute("data-rank").split(" ").map(Number);
          });
          rows.forEach(function (row, index) { row.setAttribute("data-index", String(index)); });
          var current = { column: "key", reversed: false };

          function sortBy(column, reversed) {
            var index = headers.findIndex(function (header) { return header.getAttribute("data-column") === column; });
            if (index < 0) { return; }
            var rank = rankOf[column];
            var order = rows.map(function (row, position) { return position; });
            order.sort(function (a, b) {
              var result = rank === undefined
                ? rows[a].cells[index].textContent.localeCompare(rows[b].cells[index].textContent, undefined,
                    { numeric: true }) || ranks[a][0] - ranks[b][0]
                : ranks[a][rank] - ranks[b][rank];
              return reversed ? -result : result;
            });
            var fragment = document.createDocumentFragment();
            order.forEach(function (position) { fragment.appendChild(rows[position]); });
            body.appendChild(fragment);
            headers.forEach(function (header) { header.removeAttribute("aria-sort"); });
            headers[index].setAttribute("aria-sort", reversed ? "descending" : "ascending");
            current = { column: column, reversed: reversed };
          }

          function applyFilter(text) {
            var needle = text.toLowerCase();
            var count = 0;
            rows.forEach(function (row, position) {
              var visible = needle === "" || keys[position].indexOf(needle) >= 0;
              row.hidden = !visible;
              if (visible) { count += 1; }
            });
            shown.textContent = count + " of " + rows.length + " shown";
          }

          headers.forEach(function (header) {
            header.querySelector("button").addEventListener("click", function () {
              var column = header.getAttribute("data-column");
              sortBy(column, column === current.column ? !current.reversed : false);
            });
          });
          filter.addEventListener("input", function () { applyFilter(filter.value); });

          location.hash.replace(/^#/, "").split("&").forEach(function (part) {
            var pair = part.split("=");
            var value = decodeURIComponent(pair.slice(1).join("="));
            if (pair[0] === "sort") {
              var reversed = /-reversed$/.test(value);
              sortBy(value.replace(/-reversed$/, ""), reversed);
            } else if (pair[0] === "filter") {
              filter.value = value;
              applyFilter(value);
            }
          });
          document.body.setAttribute("data-state", "ready");
        })();

        """
}
