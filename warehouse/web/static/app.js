// Sortable tables: click a header to sort by that column (numbers numerically), click again to reverse.
document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("table.sortable")) {
    table.querySelectorAll("th").forEach((th, col) => {
      th.addEventListener("click", () => {
        const body = table.tBodies[0];
        const asc = !th.classList.contains("sorted-asc");
        table.querySelectorAll("th").forEach(h => h.classList.remove("sorted-asc", "sorted-desc"));
        th.classList.add(asc ? "sorted-asc" : "sorted-desc");
        const key = tr => {
          const t = (tr.cells[col] ? tr.cells[col].textContent : "").trim().replace(/,/g, "");
          const n = parseFloat(t);
          return isNaN(n) || !/^[-+]?\d/.test(t) ? t.toLowerCase() : n;
        };
        const rows = Array.from(body.rows);
        rows.sort((a, b) => {
          const x = key(a), y = key(b);
          if (typeof x === typeof y) return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
          return (typeof x === "number" ? -1 : 1) * (asc ? 1 : -1);
        });
        rows.forEach(r => body.appendChild(r));
      });
    });
  }
});
