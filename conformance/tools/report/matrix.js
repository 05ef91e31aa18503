// The capability matrix page: filters, and a cell's cases in a dialog. Without scripts the page
// still works: each cell links to its cases further down.
(function () {
  "use strict";
  var grid = document.getElementById("matrix");
  var form = document.getElementById("filters");
  if (!grid || !form) return;
  var text = document.getElementById("f-text");
  var verdict = document.getElementById("f-verdict");
  var count = document.getElementById("f-count");
  var boxes = Array.prototype.slice.call(form.querySelectorAll("input[data-target]"));
  var rows = Array.prototype.slice.call(grid.querySelectorAll("tbody tr.row"));
  var sections = Array.prototype.slice.call(grid.querySelectorAll("tbody tr.section"));
  form.hidden = false;

  function cellMatches(td, wanted) {
    if (!wanted) return true;
    if (wanted === "failing") return td.dataset.verdict === "no" || td.dataset.verdict === "partially";
    if (wanted === "changed") return td.dataset.changed === "yes";
    if (wanted.indexOf("outcome:") === 0) return td.dataset.outcomes.split(" ").indexOf(wanted.slice(8)) >= 0;
    return td.dataset.verdict === wanted;
  }

  function apply() {
    var shown = {};
    boxes.forEach(function (box) { shown[box.dataset.target] = box.checked; });
    grid.querySelectorAll("[data-target]").forEach(function (el) { el.hidden = !shown[el.dataset.target]; });
    var needle = text.value.trim().toLowerCase();
    var wanted = verdict.value;
    var visible = 0;
    rows.forEach(function (row) {
      var byText = !needle || row.dataset.search.indexOf(needle) >= 0;
      var cells = Array.prototype.filter.call(row.querySelectorAll("td[data-target]"),
                                              function (td) { return shown[td.dataset.target]; });
      var byVerdict = !wanted || cells.some(function (td) { return cellMatches(td, wanted); });
      row.hidden = !(byText && byVerdict);
      if (!row.hidden) visible += 1;
    });
    sections.forEach(function (section) {
      var next = section.nextElementSibling, any = false;
      while (next && !next.classList.contains("section")) {
        if (!next.hidden) any = true;
        next = next.nextElementSibling;
      }
      section.hidden = !any;
    });
    count.value = "showing " + visible + " of " + rows.length + " rows";
  }

  form.addEventListener("input", apply);
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  apply();

  var dialog = document.getElementById("cases-dialog");
  if (!dialog || typeof dialog.showModal !== "function") return;
  var title = document.getElementById("cases-dialog-title");
  var body = dialog.querySelector(".dialog-body");
  var opener = null;
  dialog.querySelector("button.close").addEventListener("click", function () { dialog.close(); });
  dialog.addEventListener("close", function () { if (opener) opener.focus(); });
  grid.addEventListener("click", function (e) {
    var link = e.target.closest("td a[href^='#cases-']");
    if (!link) return;
    var source = document.getElementById(link.getAttribute("href").slice(1));
    if (!source) return;
    e.preventDefault();
    opener = link;
    title.textContent = source.dataset.title;
    body.innerHTML = "";
    body.appendChild(source.querySelector(".cell-body").cloneNode(true));
    dialog.showModal();
    body.scrollTop = 0;
  });
})();
