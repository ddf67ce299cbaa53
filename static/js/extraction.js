// Extraction page: poll the progress fragment while the job runs, reload when it
// finishes (the results table is rendered by the server); select-all checkbox.
(function () {
  "use strict";
  function poll() {
    var box = document.getElementById("extract-progress");
    if (!box || !box.dataset.poll) return;
    fetch(box.dataset.poll, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var holder = document.createElement("div");
        holder.innerHTML = html;
        var fresh = holder.firstElementChild;
        if (fresh && fresh.dataset.finished) { window.location.reload(); return; }
        if (fresh) { box.replaceWith(fresh); }
        setTimeout(poll, 1000);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  document.addEventListener("DOMContentLoaded", function () {
    setTimeout(poll, 1000);
    var all = document.getElementById("select-all");
    if (all) {
      all.addEventListener("change", function () {
        document.querySelectorAll('input[name="kernel"]').forEach(function (c) { c.checked = all.checked; });
      });
    }
  });
})();
