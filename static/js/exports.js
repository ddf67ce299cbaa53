// Follow a running export: re-fetch the server-rendered status fragment until it is finished,
// then reload once so the file list appears.
(function () {
  "use strict";
  function poll() {
    var el = document.getElementById("export-status");
    if (!el || !el.dataset.poll) return;
    fetch(el.dataset.poll, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var box = document.createElement("div");
        box.innerHTML = html;
        var fresh = box.querySelector("#export-status");
        if (!fresh) return;
        if (!fresh.dataset.poll) { window.location.reload(); return; }
        el.replaceWith(fresh);
        setTimeout(poll, 2000);
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1500);
})();
